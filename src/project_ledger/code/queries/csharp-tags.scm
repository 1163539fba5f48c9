; C# tags (tree-sitter-c-sharp ships none that we load): namespaces, types,
; methods, constructors, constants, and the references a repo map needs.
; Properties, events, indexers and operators are not tagged.

; --- Namespaces ---
(namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.module
; `namespace A.B;` does not enclose the file's declarations: qualify them
; through a scope over the whole compilation unit instead.
(compilation_unit
  (file_scoped_namespace_declaration name: [(identifier) (qualified_name)] @name)) @scope

; --- Types ---
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(struct_declaration name: (identifier) @name) @definition.struct
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(record_declaration "struct" name: (identifier) @name) @definition.struct
(delegate_declaration name: (identifier) @name) @definition.type

; --- Members ---
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function

((field_declaration
   (modifier) @_const
   (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant
  (#eq? @_const "const"))
(enum_member_declaration name: (identifier) @name) @definition.constant

; --- References ---
(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (generic_name (identifier) @name)) @reference.call
(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call
(invocation_expression function: (member_access_expression name: (generic_name (identifier) @name))) @reference.call

(object_creation_expression type: [
  (identifier) @name
  (generic_name (identifier) @name)
  (qualified_name name: (identifier) @name)
  (qualified_name name: (generic_name (identifier) @name))
]) @reference.class

(base_list [
  (identifier) @name
  (generic_name (identifier) @name)
  (qualified_name name: (identifier) @name)
  (qualified_name name: (generic_name (identifier) @name))
]) @reference.class

((_ type: [
  (identifier) @name
  (generic_name (identifier) @name)
  (qualified_name name: (identifier) @name)
  (nullable_type type: (identifier) @name)
  (array_type type: (identifier) @name)
]) @reference.type
  (#not-match? @name "^(var|dynamic|nameof|[A-Z])$"))
((_ returns: [
  (identifier) @name
  (generic_name (identifier) @name)
  (qualified_name name: (identifier) @name)
  (nullable_type type: (identifier) @name)
  (array_type type: (identifier) @name)
]) @reference.type
  (#not-match? @name "^(var|dynamic|[A-Z])$"))
((type_argument_list (identifier) @name) @reference.type
  (#not-match? @name "^[A-Z]$"))
(attribute name: (identifier) @name) @reference.attribute

; A using alias is a use too: `using RenderMarkup = App.Markup.Render;`.
(using_directive name: (identifier) @name) @reference.import
