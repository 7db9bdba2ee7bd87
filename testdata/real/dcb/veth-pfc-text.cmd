["dcb", "pfc", "show", "dev", "v0"]
