; Shared by JavaScript, TypeScript and TSX (loaded after the upstream tags.scm of
; tree-sitter-javascript, and of tree-sitter-typescript for TS and TSX).

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

; An alias is a use too: `import { render as renderMarkup }`, `import * as md`.
(import_specifier alias: (identifier) @name) @reference.import
(namespace_import (identifier) @name) @reference.import
