#compdef marm

_marm_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _MARM_COMPLETE=complete_zsh marm)
}

compdef _marm_completion marm
