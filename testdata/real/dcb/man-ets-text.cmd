["dcb", "ets", "show", "dev", "eth0", "prio-tc", "tc-tsa", "tc-bw"]
