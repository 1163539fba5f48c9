; TypeScript and TSX, after ecma-tags.scm.

; TypeScript: upstream has interfaces, abstract classes, `module`,
; signatures; these add the rest.
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method

(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum

; Namespaces. A bare `namespace NS {}` sits in an expression_statement of the
; same extent; capturing that (later, so it wins) lets the extractor find the
; doc comment above it. `declare module "x"` too.
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
(expression_statement (internal_module name: [(identifier) (nested_identifier)] @name)) @definition.module
(module name: [(identifier) (nested_identifier)] @name) @definition.module
(module name: (string (string_fragment) @name)) @definition.module

; References: types wherever used (single-letter type parameters left out),
; base classes.
((type_identifier) @name @reference.type
  (#not-match? @name "^[A-Z]$"))
(extends_clause value: (identifier) @name) @reference.class
(extends_clause value: (member_expression property: (property_identifier) @name)) @reference.class
(nested_type_identifier name: (type_identifier) @name) @reference.type

; Method signatures in an inline parameter or variable type
; (`({ a }: { onToggle(id: number): void })`) are not members of anything
; named; upstream tags them, this drops them. Those in interfaces and type
; aliases stay.
(type_annotation (object_type (method_signature name: (_) @name) @definition.ignore))
