; Our additions to tree-sitter-rust's tags.scm. Upstream calls structs, enums,
; unions and type aliases `class`, traits `interface`, and every fn in a
; declaration list (impl, trait, but also mod) `method`; the patterns below
; give them their own kinds (ours win: they come later). Functions become
; methods by nesting, in an impl (a @scope named after its type: Type::fn)
; or a trait.

(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.union
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name) @definition.trait
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(associated_type name: (type_identifier) @name) @definition.type

; Constants and statics at module, impl or trait level (not inside fn bodies).
(source_file (const_item name: (identifier) @name) @definition.constant)
(source_file (static_item name: (identifier) @name) @definition.constant)
(declaration_list (const_item name: (identifier) @name) @definition.constant)
(declaration_list (static_item name: (identifier) @name) @definition.constant)

; Items under attributes: the doc comment sits above `#[...]`, not directly
; above the item, so the comments before the attributes are captured. (One
; pattern with an alternation: as separate patterns they cost 3x the rest.)
(
  [(line_comment) (block_comment)]* @doc
  .
  (attribute_item)+
  .
  [
    (struct_item name: (type_identifier) @name) @definition.struct
    (union_item name: (type_identifier) @name) @definition.union
    (enum_item name: (type_identifier) @name) @definition.enum
    (type_item name: (type_identifier) @name) @definition.type
    (associated_type name: (type_identifier) @name) @definition.type
    (trait_item name: (type_identifier) @name) @definition.trait
    (mod_item name: (identifier) @name) @definition.module
    (macro_definition name: (identifier) @name) @definition.macro
    (function_item name: (identifier) @name) @definition.function
    (function_signature_item name: (identifier) @name) @definition.function
    (const_item name: (identifier) @name) @definition.constant
    (static_item name: (identifier) @name) @definition.constant
  ]
)

; `impl Type`, `impl<T> Trait for Type<T>`, `impl fmt::Debug for crate::Type`:
; a scope named after the implementing type.
(impl_item
  type: [
    (type_identifier) @name
    (primitive_type) @name
    (generic_type type: (type_identifier) @name)
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
    (reference_type type: (type_identifier) @name)
    (reference_type type: (generic_type type: (type_identifier) @name))
  ]) @scope

; References: types wherever they are used (single-letter generics left out),
; `Type::assoc` paths, path and turbofish calls, trait impls, imports.
((type_identifier) @name @reference.type
  (#not-match? @name "^([A-Z]|Self)$"))
((scoped_identifier path: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))
(call_expression
  function: (scoped_identifier name: (identifier) @name)) @reference.call
(call_expression
  function: (generic_function function: [
    (identifier) @name
    (scoped_identifier name: (identifier) @name)
    (field_expression field: (field_identifier) @name)
  ])) @reference.call
(impl_item
  trait: (scoped_type_identifier name: (type_identifier) @name)) @reference.implementation
(impl_item
  trait: (generic_type type: (type_identifier) @name)) @reference.implementation

(use_declaration argument: (identifier) @name) @reference.import
(use_declaration argument: (scoped_identifier name: (identifier) @name)) @reference.import
(use_list (identifier) @name) @reference.import
(use_list (scoped_identifier name: (identifier) @name)) @reference.import
(use_as_clause path: (identifier) @name) @reference.import
(use_as_clause path: (scoped_identifier name: (identifier) @name)) @reference.import

; An alias is a use too: `use crate::markup::render as render_markup;`.
(use_as_clause alias: (identifier) @name) @reference.import
