; Our additions to tree-sitter-php's tags.scm: traits as traits, enums,
; constants, and the references upstream misses (its call and `new` patterns
; expect a qualified_name, but a plain `foo()` / `new Foo` is a bare name).
; Properties stay untagged (upstream's `field` kind is dropped).

(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(enum_case name: (name) @name) @definition.constant
(const_declaration (const_element (name) @name)) @definition.constant
((function_call_expression
   function: (name) @_define
   arguments: (arguments . (argument (string (string_content) @name)))) @definition.constant
  (#eq? @_define "define"))

; --- References ---
((function_call_expression function: (name) @name) @reference.call
  (#not-eq? @name "define"))
(function_call_expression function: (qualified_name (name) @name .)) @reference.call
(object_creation_expression [
  (name) @name
  (qualified_name (name) @name .)
] (#not-match? @name "^(static|self|parent)$")) @reference.class
(base_clause [(name) @name (qualified_name (name) @name .)]) @reference.class
(class_interface_clause (qualified_name (name) @name .)) @reference.implementation
(use_declaration [(name) @name (qualified_name (name) @name .)]) @reference.trait
((scoped_call_expression scope: [(name) @name (qualified_name (name) @name .)]) @reference.class
  (#not-match? @name "^(static|self|parent)$"))
((class_constant_access_expression . [(name) @name (qualified_name (name) @name .)]) @reference.class
  (#not-match? @name "^(static|self|parent)$"))
((named_type [(name) @name (qualified_name (name) @name .)]) @reference.type
  (#not-match? @name "^(static|self|parent|mixed)$"))
(namespace_use_clause [(name) @name (qualified_name (name) @name .)]) @reference.import
