["mstfwreset","-d","0000:5e:00.0","query"]
