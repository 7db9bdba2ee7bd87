["dcb", "app", "replace", "dev", "v0", "dscp-prio", "26:3"]
