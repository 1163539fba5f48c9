; Bash tags (tree-sitter-bash ships none): functions, read-only variables
; as constants, and commands as calls — minus shell builtins and the common
; utilities, which would drown the calls to the script's own functions.

(function_definition name: (word) @name) @definition.function

((declaration_command
   "readonly"
   (variable_assignment name: (variable_name) @name)) @definition.constant)
((declaration_command
   ["declare" "typeset"]
   (word) @_flag
   (variable_assignment name: (variable_name) @name)) @definition.constant
  (#match? @_flag "^-[a-zA-Z]*r"))

((command name: (command_name (word) @name)) @reference.call
  (#not-match? @name "^(\\.|:|\\[|\\[\\[|alias|awk|basename|bash|bg|break|builtin|cat|cd|chmod|chown|command|continue|cp|curl|cut|date|declare|dirname|echo|eval|exec|exit|export|expr|false|fg|find|getopts|grep|hash|head|jobs|kill|let|ln|local|ls|mkdir|mktemp|mv|printf|pwd|read|readonly|return|rm|rmdir|sed|set|shift|sleep|sort|source|sh|tail|tee|test|touch|tr|trap|true|type|typeset|ulimit|umask|unalias|uniq|unset|wait|wc|xargs)$"))
