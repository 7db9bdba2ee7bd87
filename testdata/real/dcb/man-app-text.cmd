["dcb", "-N", "app", "show", "dev", "eth0", "dscp-prio"]
