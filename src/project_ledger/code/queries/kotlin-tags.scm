; Kotlin tags (tree-sitter-kotlin ships none): classes, interfaces, enums,
; objects, functions (methods inside a type), `const val` constants, type
; aliases, and the references a repo map needs. Extension functions are
; qualified by their receiver type: `fun Item.total()` -> Item.total.

; --- Types ---
(class_declaration name: (identifier) @name) @definition.class
(class_declaration "interface" name: (identifier) @name) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body)) @definition.enum
(object_declaration name: (identifier) @name) @definition.class
(companion_object name: (identifier) @name) @definition.class
(type_alias type: (identifier) @name) @definition.type
(enum_entry . (identifier) @name) @definition.constant

; --- Functions ---
(function_declaration name: (identifier) @name) @definition.function
(function_declaration
  (user_type . (identifier) @parent)
  .
  name: (identifier) @name) @definition.function

; --- `const val` ---
((property_declaration
   (modifiers (property_modifier) @_const)
   (variable_declaration . (identifier) @name)) @definition.constant
  (#eq? @_const "const"))

; --- References ---
(call_expression . (identifier) @name) @reference.call
(call_expression . (navigation_expression (identifier) @name .)) @reference.call
(delegation_specifier [
  (user_type . (identifier) @name)
  (constructor_invocation (user_type . (identifier) @name))
]) @reference.class
((user_type . (identifier) @name) @reference.type
  (#not-match? @name "^([A-Z]|Int|Long|Short|Byte|Double|Float|Boolean|Char|String|Unit|Any|Nothing)$"))
(import (qualified_identifier (identifier) @name .)) @reference.import

; An alias is a use too: `import app.markup.render as renderMarkup`.
(import (identifier) @name) @reference.import
