; Our additions to tree-sitter-ruby's tags.scm, written to stand alone too.
; Upstream attaches doc comments through #select-adjacent! (not implemented in
; py-tree-sitter, so it can gather unrelated comments) and tags every
; identifier as a call; these patterns re-tag the same nodes without @doc so
; the comments directly above are used.

; --- Methods: `def` at top level is a function, inside a class/module a method ---
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(program (method name: (_) @name) @definition.function)
(alias name: (_) @name) @definition.method

; --- Classes and modules; `class A::B` is B owned by A ---
(class name: (constant) @name) @definition.class
(class name: (scope_resolution scope: (_) @parent name: (_) @name)) @definition.class
(module name: (constant) @name) @definition.module
(module name: (scope_resolution scope: (_) @parent name: (_) @name)) @definition.module
; `class << Foo` opens Foo's singleton class: a scope, not a new class.
(singleton_class value: [(constant) @name (scope_resolution name: (_) @name)]) @scope

; --- Constants assigned in a class, module or at top level ---
(program (assignment left: (constant) @name) @definition.constant)
(body_statement (assignment left: (constant) @name) @definition.constant)

; A comment above the first statement of a class or module body sits outside
; the body node, so the extractor's look-above finds nothing: capture it.
[
  (class (comment)+ @doc . body: (body_statement . (method name: (_) @name) @definition.method))
  (module (comment)+ @doc . body: (body_statement . (method name: (_) @name) @definition.method))
  (singleton_class (comment)+ @doc . body: (body_statement . (method name: (_) @name) @definition.method))
]
[
  (class (comment)+ @doc . body: (body_statement . (singleton_method name: (_) @name) @definition.method))
  (module (comment)+ @doc . body: (body_statement . (singleton_method name: (_) @name) @definition.method))
  (singleton_class (comment)+ @doc . body: (body_statement . (singleton_method name: (_) @name) @definition.method))
]
[
  (class (comment)+ @doc . body: (body_statement . (class name: (constant) @name) @definition.class))
  (module (comment)+ @doc . body: (body_statement . (class name: (constant) @name) @definition.class))
  (singleton_class (comment)+ @doc . body: (body_statement . (class name: (constant) @name) @definition.class))
]
[
  (class (comment)+ @doc . body: (body_statement . (module name: (constant) @name) @definition.module))
  (module (comment)+ @doc . body: (body_statement . (module name: (constant) @name) @definition.module))
  (singleton_class (comment)+ @doc . body: (body_statement . (module name: (constant) @name) @definition.module))
]
[
  (class (comment)+ @doc . body: (body_statement . (assignment left: (constant) @name) @definition.constant))
  (module (comment)+ @doc . body: (body_statement . (assignment left: (constant) @name) @definition.constant))
  (singleton_class (comment)+ @doc . body: (body_statement . (assignment left: (constant) @name) @definition.constant))
]

; --- References ---
((call method: (identifier) @name) @reference.call
  (#not-match? @name "^(new|require|require_relative|load|include|extend|prepend|attr_reader|attr_writer|attr_accessor|private|protected|public|module_function|private_constant|raise|puts|p|lambda|proc|loop)$"))
(call receiver: (constant) @name) @reference.class
(scope_resolution name: (constant) @name) @reference.class
(superclass (constant) @name) @reference.class
((call
   method: (identifier) @_mixin
   arguments: (argument_list [(constant) @name (scope_resolution name: (constant) @name)])) @reference.module
  (#match? @_mixin "^(include|extend|prepend)$"))
(rescue (exceptions (constant) @name)) @reference.class
