
# Without the bash-completion package: the one helper the script above needs.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    while [[ $# -gt 0 && $1 == -* ]]; do
        [[ $1 == -n || $1 == -i || $1 == -w ]] && shift
        shift
    done
    local __line=${COMP_LINE:0:COMP_POINT}
    local -a __words
    read -ra __words <<< "$__line"
    [[ -z $__line || $__line =~ [[:space:]]$ ]] && __words+=("")
    local __cword=$(( ${#__words[@]} - 1 ))
    local __prev=""
    (( __cword > 0 )) && __prev=${__words[__cword-1]}
    while [[ $# -gt 0 ]]; do
        case $1 in
            cur) cur=${__words[__cword]} ;;
            prev) prev=$__prev ;;
            words) words=("${__words[@]}") ;;
            cword) cword=$__cword ;;
        esac
        shift
    done
}
fi
