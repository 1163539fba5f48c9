; Our additions to tree-sitter-javascript's and tree-sitter-typescript's tags.scm
; (both come first). Keep in step with tsx-tags.scm, which adds JSX.

; Upstream's class, method and function patterns carry `(comment)* @doc`
; with `#select-adjacent!`, which py-tree-sitter does not implement, so their
; @doc would gather every earlier comment among the siblings. These plain
; patterns replace them (they come later, so they win); the extractor then
; reads the comments directly above the definition or its `export`.

(method_definition
  name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method

[
  (class name: (_) @name)
  (class_declaration name: (_) @name)
] @definition.class

[
  (function_expression name: (identifier) @name)
  (function_declaration name: (identifier) @name)
  (generator_function name: (identifier) @name)
  (generator_function_declaration name: (identifier) @name)
] @definition.function

; Top-level UPPER_CASE `const`s: `export const MAX_SIZE = 10`.
((program (lexical_declaration "const" . (variable_declarator name: (identifier) @name) .) @definition.constant)
  (#match? @name "^[A-Z][A-Z0-9_]*$"))
((program (export_statement (lexical_declaration "const" . (variable_declarator name: (identifier) @name) .) @definition.constant))
  (#match? @name "^[A-Z][A-Z0-9_]*$"))

; `const f = () => ...`: with a single declarator the declaration is the
; definition, so the doc comment above it (or above its `export`) is found;
; with several, each declarator is.
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
(lexical_declaration .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) .) @definition.function
(variable_declaration .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) .) @definition.function
(lexical_declaration .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.ignore .)
(variable_declaration .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.ignore .)

; `const Foo = class { ... }`, `var Foo = class { ... }`
[
  (lexical_declaration . (variable_declarator name: (identifier) @name value: (class)) .)
  (variable_declaration . (variable_declarator name: (identifier) @name value: (class)) .)
] @definition.class

; References: imported names, base classes.
(import_specifier name: (identifier) @name) @reference.import
(import_clause (identifier) @name) @reference.import

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
