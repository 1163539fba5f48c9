; Our additions to tree-sitter-c's tags.scm. Upstream tags the bare
; `function_declarator` (no return type, no body, no doc comment above it) and
; every `enum X` use as a definition; we re-tag the whole definition or
; prototype instead, re-kind structs/unions/enums, and add macros, typedefs
; through pointers, enumerators, file-level constants and the references a
; repo map needs (calls, type uses).

; --- Upstream patterns we replace (same node and name, so these win) ---
(function_declarator declarator: (identifier) @name) @definition.ignore
(enum_specifier name: (type_identifier) @name) @definition.ignore
(declaration type: (union_specifier name: (type_identifier) @name)) @definition.ignore

; --- Functions: definitions and prototypes, also returning pointers ---
(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  ]) @definition.function

(declaration
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  ]) @definition.function

; --- Structs, unions, enums (only with a body: `struct X *p` is a use) ---
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum

; `typedef struct X { ... } Y;` is one definition named Y (the struct X inside
; would otherwise nest as Y.X); a bare typedef is a type.
(type_definition
  type: (struct_specifier body: (_))
  declarator: (type_identifier) @name) @definition.struct
(type_definition
  type: (union_specifier body: (_))
  declarator: (type_identifier) @name) @definition.struct
(type_definition
  type: (enum_specifier body: (_))
  declarator: (type_identifier) @name) @definition.enum
(type_definition
  type: (struct_specifier name: (type_identifier) @name body: (_)) @definition.ignore)
(type_definition
  type: (union_specifier name: (type_identifier) @name body: (_)) @definition.ignore)
(type_definition
  type: (enum_specifier name: (type_identifier) @name body: (_)) @definition.ignore)

; `typedef struct X *XP;` and `typedef int (*cb_t)(int);`
(type_definition
  declarator: [
    (pointer_declarator declarator: (type_identifier) @name)
    (pointer_declarator declarator: (pointer_declarator declarator: (type_identifier) @name))
    (function_declarator declarator: (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))
    (function_declarator declarator: (type_identifier) @name)
    (array_declarator declarator: (type_identifier) @name)
  ]) @definition.type

(enumerator name: (identifier) @name) @definition.constant

; --- Macros: function-like, and object-like with a value (not include guards) ---
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.macro

; --- File-level `const` variables with an initializer (also inside #if blocks) ---
([(translation_unit
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
  (preproc_ifdef
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
  (preproc_if
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
  (preproc_else
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)]
  (#eq? @_const "const"))

; --- References ---
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(_ type: (type_identifier) @name) @reference.type
(struct_specifier name: (type_identifier) @name !body) @reference.type
(union_specifier name: (type_identifier) @name !body) @reference.type
(enum_specifier name: (type_identifier) @name !body) @reference.type

; glibc-style prototypes with trailing attribute macros (`__THROW __nonnull ((1))`)
; parse as an ERROR around the declarator: keep the function name at least.
((ERROR (function_declarator declarator: (identifier) @name) @definition.function)
  (#not-match? @name "^(if|while|for|switch|return|sizeof|case)$"))

; A prototype inside a function body is a local declaration (or a misparsed
; macro call), not an API: drop it.
(compound_statement
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @definition.ignore)
