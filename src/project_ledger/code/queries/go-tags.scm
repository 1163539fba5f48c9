; Our additions to tree-sitter-go's tags.scm. Upstream's function and method
; patterns carry `(comment)* @doc` with `#set-adjacent!`, which py-tree-sitter
; does not implement; the plain patterns below replace them so docs come from
; the comments directly above. Upstream tags every type_spec as `type`; we
; re-kind structs and interfaces, put methods under their receiver type, and
; add constants and interface methods.

(function_declaration
  name: (identifier) @name) @definition.function

; `func (s *Server) Start()` -> Server.Start; generic receivers too.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @parent
        (pointer_type (type_identifier) @parent)
        (generic_type type: (type_identifier) @parent)
        (pointer_type (generic_type type: (type_identifier) @parent))
      ]))
  name: (field_identifier) @name) @definition.method

; Types. In a parenthesised group the spec is the definition; a lone
; `type X ...` uses the whole declaration so its doc comment and the `type`
; keyword belong to it (the spec itself is ignored further down).
(type_spec
  name: (type_identifier) @name) @definition.type
(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.struct
(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface
(type_alias
  name: (type_identifier) @name) @definition.type

(type_declaration . (type_spec name: (type_identifier) @name) .) @definition.type
(type_declaration . (type_spec name: (type_identifier) @name type: (struct_type)) .) @definition.struct
(type_declaration . (type_spec name: (type_identifier) @name type: (interface_type)) .) @definition.interface
(type_declaration . (type_alias name: (type_identifier) @name) .) @definition.type

(type_declaration . (type_spec name: (type_identifier) @name) @definition.ignore .)
(type_declaration . (type_alias name: (type_identifier) @name) @definition.ignore .)

; Interface methods: `Read(p []byte) (int, error)` -> Reader.Read.
(method_elem
  name: (field_identifier) @name) @definition.method

; Package-level constants, the same way: a lone `const X = 1` is the
; declaration, a spec in a `const (...)` group is the spec.
(source_file
  (const_declaration
    (const_spec name: (identifier) @name) @definition.constant))
(source_file
  (const_declaration . (const_spec name: (identifier) @name) .) @definition.constant)
(source_file
  (const_declaration . (const_spec name: (identifier) @name) @definition.ignore .))

; `const A, B = 1, 2`: one node holds several names, so each name is its own
; definition and the spec or declaration is ignored for them.
;; (A repeated field name never matches in a pattern, so these leave it out:
;; a const_spec's direct identifier children are all names.)
(const_spec (identifier) @name . (identifier)) @definition.ignore
(const_spec (identifier) (identifier) @name) @definition.ignore
(const_declaration . (const_spec (identifier) @name . (identifier)) .) @definition.ignore
(const_declaration . (const_spec (identifier) (identifier) @name) .) @definition.ignore
(source_file
  (const_declaration
    (const_spec (identifier) @name @definition.constant . (identifier))))
(source_file
  (const_declaration
    (const_spec (identifier) (identifier) @name @definition.constant)))

; Imports, by path: `"net/http"` -> net/http.
(import_spec
  path: (interpreted_string_literal (interpreted_string_literal_content) @name)) @reference.import

; An import's alias is a use too: `import md "example.com/markup"`.
(import_spec name: (package_identifier) @name) @reference.import
