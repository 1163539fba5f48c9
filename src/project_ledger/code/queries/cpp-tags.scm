; Our additions to tree-sitter-cpp's tags.scm. Upstream tags the bare
; `function_declarator` (no return type, no body, no doc comment above it),
; every `class X` / `enum X` use as a definition, and structs as classes; we
; re-tag whole definitions and prototypes instead, qualify out-of-line
; members (`void Foo::bar() {}` -> Foo::bar), and add namespaces, aliases,
; macros, enumerators, constants and the references a repo map needs.

; --- Upstream patterns we replace (same node and name, so these win) ---
(function_declarator declarator: (identifier) @name) @definition.ignore
(function_declarator declarator: (field_identifier) @name) @definition.ignore
(function_declarator declarator: (qualified_identifier scope: (namespace_identifier) name: (identifier) @name)) @definition.ignore
(enum_specifier name: (type_identifier) @name) @definition.ignore
(class_specifier name: (type_identifier) @name) @definition.ignore
(declaration type: (union_specifier name: (type_identifier) @name)) @definition.ignore

; --- Namespaces ---
(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.module

; --- Classes, structs, unions, enums (only with a body: `class X;` is a use) ---
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
; Specialisations `class Foo<int> {}` and out-of-line nested `class Outer::Inner {}`.
(class_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.class
(struct_specifier name: (template_type name: (type_identifier) @name) body: (_)) @definition.struct
(class_specifier
  name: (qualified_identifier scope: (_) @parent name: (type_identifier) @name) body: (_)) @definition.class
(struct_specifier
  name: (qualified_identifier scope: (_) @parent name: (type_identifier) @name) body: (_)) @definition.struct

(enumerator name: (identifier) @name) @definition.constant

; `class EXPORT_MACRO Name { ... };` parses as a declaration of `Name` whose
; initializer is the body: keep the class (its members are lost to the error).
((declaration
   type: [(class_specifier name: (type_identifier) @_macro !body)
          (struct_specifier name: (type_identifier) @_macro !body)]
   declarator: (init_declarator declarator: (identifier) @name value: (initializer_list))) @definition.class
  (#match? @_macro "^[A-Z][A-Z0-9_]*$"))

; --- Typedefs and aliases; `typedef struct X {...} Y;` is one struct named Y ---
(alias_declaration name: (type_identifier) @name) @definition.type
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
(type_definition
  declarator: [
    (pointer_declarator declarator: (type_identifier) @name)
    (function_declarator declarator: (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))
    (function_declarator declarator: (type_identifier) @name)
  ]) @definition.type

; --- Functions and in-class members: definitions and declarations ---
; (a function nested in a class becomes a method)
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name))
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name))
  ]) @definition.function

(declaration
  declarator: [
    (function_declarator declarator: [(identifier) (destructor_name) (operator_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (operator_name)] @name))
    (reference_declarator (function_declarator declarator: [(identifier) (operator_name)] @name))
  ]) @definition.function

(field_declaration
  declarator: [
    (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(field_identifier) (operator_name)] @name))
    (reference_declarator (function_declarator declarator: [(field_identifier) (operator_name)] @name))
  ]) @definition.function

; Out-of-line members: `R Foo::bar(...) {}`, `Foo<T>::bar`, `A::B::bar` (owner B).
(function_definition
  declarator: [
    (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) (destructor_name) (operator_name)] @name))
    (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) (operator_name)] @name)))
    (reference_declarator (function_declarator declarator: (qualified_identifier
      scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
      name: [(identifier) (operator_name)] @name)))
    (function_declarator declarator: (qualified_identifier
      name: (qualified_identifier
        scope: [(namespace_identifier) @parent (template_type name: (type_identifier) @parent)]
        name: [(identifier) (destructor_name) (operator_name)] @name)))
  ]) @definition.method

; A prototype inside a function body is a local declaration or, far more
; often, a variable with constructor arguments (`Foo f(x);`): drop it.
(compound_statement
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
      (reference_declarator (function_declarator declarator: (identifier) @name))
    ]) @definition.ignore)

; --- Constants: namespace-level const/constexpr with an initializer, static const members ---
([(translation_unit
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
  (declaration_list
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
     declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)]
  (#match? @_const "^(const|constexpr)$"))

((field_declaration
   (storage_class_specifier) @_static
   (type_qualifier) @_const
   declarator: (field_identifier) @name
   default_value: (_)) @definition.constant
  (#eq? @_static "static")
  (#match? @_const "^(const|constexpr)$"))

; --- Macros: function-like, and object-like with a value (not include guards) ---
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.macro

; --- References ---
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
(call_expression function: (template_function name: (identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (template_function name: (identifier) @name))) @reference.call

(new_expression type: [
  (type_identifier) @name
  (template_type name: (type_identifier) @name)
  (qualified_identifier name: (type_identifier) @name)
  (qualified_identifier name: (template_type name: (type_identifier) @name))
]) @reference.class

(base_class_clause [
  (type_identifier) @name
  (template_type name: (type_identifier) @name)
  (qualified_identifier name: (type_identifier) @name)
  (qualified_identifier name: (template_type name: (type_identifier) @name))
]) @reference.class

((_ type: (type_identifier) @name) @reference.type
  (#not-match? @name "^[A-Z][0-9]?$"))
(_ type: (template_type name: (type_identifier) @name)) @reference.type
(_ type: (qualified_identifier name: (type_identifier) @name)) @reference.type
(_ type: (qualified_identifier name: (template_type name: (type_identifier) @name))) @reference.type
((template_argument_list (type_descriptor type: (type_identifier) @name)) @reference.type
  (#not-match? @name "^[A-Z][0-9]?$"))
