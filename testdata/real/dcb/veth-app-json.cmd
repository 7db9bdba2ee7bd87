["dcb", "-j", "app", "show", "dev", "v0"]
