["dcb", "-j", "app", "show", "dev", "eth0"]
