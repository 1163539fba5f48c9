; Our additions to tree-sitter-lua's tags.scm: `function M.f()` and
; `M.f = function() end` are owned by M (qualname M.f, still functions);
; `function M:f()` is a method of M; `local f = function` takes its doc
; comment from above the `local`; UPPER_CASE values at file level are constants.

; --- Functions owned by a table (same node and name as upstream, so these win) ---
(function_declaration
  name: (dot_index_expression table: (_) @parent field: (identifier) @name)) @definition.function
(function_declaration
  name: (method_index_expression table: (_) @parent method: (identifier) @name)) @definition.method
(assignment_statement
  (variable_list . name: (dot_index_expression table: (_) @parent field: (identifier) @name))
  (expression_list . value: (function_definition))) @definition.function

; `local f = function() end`: the definition is the whole `local` statement.
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @name)
    (expression_list . value: (function_definition)))) @definition.function
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @name)
    (expression_list . value: (function_definition))) @definition.ignore)

; --- Constants: UPPER_CASE names given a non-function value at file level ---
((chunk
   (assignment_statement
     (variable_list . name: [
       (identifier) @name
       (dot_index_expression table: (_) @parent field: (identifier) @name)])
     (expression_list . value: [(string) (number) (true) (false) (table_constructor)])) @definition.constant)
  (#match? @name "^[A-Z][A-Z0-9_]+$"))
((chunk
   (variable_declaration
     (assignment_statement
       (variable_list . name: (identifier) @name)
       (expression_list . value: [(string) (number) (true) (false) (table_constructor)]))) @definition.constant)
  (#match? @name "^[A-Z][A-Z0-9_]+$"))
