; Our additions to tree-sitter-scala's tags.scm: traits as traits, abstract
; defs, enum cases as constants, `val`s at object or file level as constants
; (upstream's `variable` kind is dropped), and more references.

(trait_definition name: (identifier) @name) @definition.trait
(function_declaration name: (identifier) @name) @definition.function
(simple_enum_case name: (identifier) @name) @definition.constant

(object_definition
  body: (template_body (val_definition pattern: (identifier) @name) @definition.constant))
(compilation_unit (val_definition pattern: (identifier) @name) @definition.constant)

; --- References ---
(call_expression function: (field_expression field: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (identifier) @name)) @reference.call
((_ type: (type_identifier) @name) @reference.type
  (#not-match? @name "^([A-Z]|Int|Long|Short|Byte|Double|Float|Boolean|Char|String|Unit|Any|AnyRef|Nothing)$"))
((_ return_type: (type_identifier) @name) @reference.type
  (#not-match? @name "^([A-Z]|Int|Long|Short|Byte|Double|Float|Boolean|Char|String|Unit|Any|AnyRef|Nothing)$"))
((type_arguments (type_identifier) @name) @reference.type
  (#not-match? @name "^([A-Z]|Int|Long|Short|Byte|Double|Float|Boolean|Char|String|Unit|Any|AnyRef|Nothing)$"))
(import_declaration path: (identifier) @name .) @reference.import

; A renamed import is a use of both names: `import app.markup.{render => renderMarkup}`.
(arrow_renamed_identifier name: (identifier) @name) @reference.import
(arrow_renamed_identifier alias: (identifier) @name) @reference.import
