; JSX components, for JavaScript and TSX: `<Button ... />` (capitalised: lower-case tags are HTML).
((jsx_opening_element name: (identifier) @name) @reference.class
  (#match? @name "^[A-Z]"))
((jsx_self_closing_element name: (identifier) @name) @reference.class
  (#match? @name "^[A-Z]"))
((jsx_opening_element name: (member_expression object: (identifier) @name)) @reference.class
  (#match? @name "^[A-Z]"))
((jsx_self_closing_element name: (member_expression object: (identifier) @name)) @reference.class
  (#match? @name "^[A-Z]"))
