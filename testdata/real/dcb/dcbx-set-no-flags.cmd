["dcb", "dcbx", "set", "dev", "v0"]
