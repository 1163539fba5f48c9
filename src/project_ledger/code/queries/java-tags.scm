; Our additions to tree-sitter-java's tags.scm (which has classes,
; interfaces and methods): enums, records, annotation types, constructors,
; and constants (static final fields, interface fields). Members nest by
; position: Outer.Inner.method.

(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.record
(annotation_type_declaration name: (identifier) @name) @definition.interface
(annotation_type_element_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.constructor
(compact_constructor_declaration name: (identifier) @name) @definition.constructor

; Constants: `static final` fields (either order) and fields of interfaces,
; which are implicitly static final. A declaration with one declarator is the
; definition (its Javadoc sits above it); with several, each declarator is.
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(field_declaration
  (modifiers "final" "static")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(constant_declaration
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant

;; (A repeated field name never matches in a pattern, hence no `declarator:`.)
(field_declaration
  (variable_declarator name: (identifier) @name) . (variable_declarator)) @definition.ignore
(field_declaration
  (variable_declarator) (variable_declarator name: (identifier) @name)) @definition.ignore
(constant_declaration
  (variable_declarator name: (identifier) @name) . (variable_declarator)) @definition.ignore
(constant_declaration
  (variable_declarator) (variable_declarator name: (identifier) @name)) @definition.ignore
(field_declaration
  (modifiers "static" "final")
  (variable_declarator name: (identifier) @name) @definition.constant . (variable_declarator))
(field_declaration
  (modifiers "static" "final")
  (variable_declarator) (variable_declarator name: (identifier) @name) @definition.constant)
(field_declaration
  (modifiers "final" "static")
  (variable_declarator name: (identifier) @name) @definition.constant . (variable_declarator))
(field_declaration
  (modifiers "final" "static")
  (variable_declarator) (variable_declarator name: (identifier) @name) @definition.constant)
(constant_declaration
  (variable_declarator name: (identifier) @name) @definition.constant . (variable_declarator))
(constant_declaration
  (variable_declarator) (variable_declarator name: (identifier) @name) @definition.constant)

; References: types wherever used (single-letter type parameters left out),
; `Type.member` on a capitalised name, imports, annotations.
((type_identifier) @name @reference.type
  (#not-match? @name "^[A-Z]$"))
((method_invocation object: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))
((field_access object: (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))
(import_declaration (scoped_identifier name: (identifier) @name)) @reference.import
(marker_annotation name: (identifier) @name) @reference.annotation
(annotation name: (identifier) @name) @reference.annotation
