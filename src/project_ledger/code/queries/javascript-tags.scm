; JavaScript only, after ecma-tags.scm.

; Class fields holding functions: `handle = () => { ... }`.
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method

(class_heritage (identifier) @name) @reference.class
(class_heritage (member_expression property: (property_identifier) @name)) @reference.class
