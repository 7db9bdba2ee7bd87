["dcb", "pfc", "set", "dev", "v0", "prio-pfc", "all:off", "3:on"]
