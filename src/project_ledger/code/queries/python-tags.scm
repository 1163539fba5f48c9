; Our additions to tree-sitter-python's tags.scm: docstrings, decorated and
; annotated definitions, and the references a repo map needs (types, bases,
; imports) besides calls. Bare names passed as arguments or used as an
; attribute's object count only when capitalised (classes): the rest are
; mostly local variables, which would triple the rows for nothing.

(class_definition
  name: (identifier) @name
  body: (block . (expression_statement (string) @doc)?)) @definition.class

(function_definition
  name: (identifier) @name
  body: (block . (expression_statement (string) @doc)?)) @definition.function

; Module-level constants with a type annotation: `TIMEOUT: float = 3.0`.
(module (expression_statement (assignment left: (identifier) @name type: (_))) @definition.constant)

; Class-level constants in UPPER_CASE.
(class_definition
  body: (block (expression_statement (assignment left: (identifier) @name) @definition.constant))
  (#match? @name "^[A-Z][A-Z0-9_]*$"))

((argument_list (identifier) @name) @reference.name (#match? @name "^[A-Z]"))
(class_definition superclasses: (argument_list (identifier) @name) @reference.class)
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @name)) @reference.class)
(type (identifier) @name) @reference.type
(type (generic_type (identifier) @name)) @reference.type
(type (subscript value: (identifier) @name)) @reference.type
(import_from_statement name: (dotted_name (identifier) @name) @reference.import)
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name)) @reference.import)
(decorator (identifier) @name) @reference.decorator
(decorator (call function: (identifier) @name)) @reference.decorator
((attribute object: (identifier) @name) @reference.name (#match? @name "^[A-Z]"))

; An alias is a use too: `from .markup import render as render_markup`, `import numpy as np`.
(aliased_import alias: (identifier) @name) @reference.import
