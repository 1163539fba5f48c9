; Our additions to tree-sitter-swift's tags.scm. Upstream tags every method
; and property with the WHOLE class or protocol as its node (so a method would
; cover its class), and calls structs, enums, actors and extensions classes.
; We drop those, re-kind by the declaration keyword, make extensions scopes,
; and add initializers, constants, type aliases and references.

; --- Upstream patterns we replace (same node and name, so these win) ---
(class_declaration
  (class_body
    [(function_declaration name: (simple_identifier) @name)
     (subscript_declaration (parameter (simple_identifier) @name))
     (init_declaration "init" @name)
     (deinit_declaration "deinit" @name)])) @definition.ignore
(protocol_declaration
  (protocol_body
    [(protocol_function_declaration name: (simple_identifier) @name)
     (subscript_declaration (parameter (simple_identifier) @name))
     (init_declaration "init" @name)])) @definition.ignore

; --- Types ---
(class_declaration declaration_kind: "class" name: (type_identifier) @name) @definition.class
(class_declaration declaration_kind: "actor" name: (type_identifier) @name) @definition.class
(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(protocol_declaration name: (type_identifier) @name) @definition.interface
(typealias_declaration name: (type_identifier) @name) @definition.type
; `extension Foo { ... }` adds to Foo: a scope, so its members read Foo.member.
(class_declaration
  declaration_kind: "extension"
  name: (user_type (type_identifier) @name .)) @scope

; Each case name is its own node: `case red, green` shares one enum_entry.
(enum_entry name: (simple_identifier) @name @definition.constant)

; --- Functions, methods, initializers ---
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(init_declaration "init" @name) @definition.method

; --- Constants: top-level `let`, and `static let` in a type ---
((source_file
   (property_declaration
     (value_binding_pattern) @_let
     name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
  (#eq? @_let "let"))
((class_body
   (property_declaration
     (modifiers (property_modifier) @_static)
     (value_binding_pattern) @_let
     name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
  (#eq? @_static "static")
  (#eq? @_let "let"))

; --- References ---
(call_expression . (simple_identifier) @name) @reference.call
(call_expression . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(inheritance_specifier inherits_from: (user_type (type_identifier) @name)) @reference.class
((user_type (type_identifier) @name) @reference.type
  (#not-match? @name "^([A-Z]|Int|Int64|Int32|UInt|Double|Float|Bool|String|Character|Void|Any|AnyObject|Self)$"))
