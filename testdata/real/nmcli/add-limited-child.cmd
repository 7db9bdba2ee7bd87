["nmcli","connection","add","type","infiniband","con-name","lim","infiniband.parent","ib0","infiniband.p-key","0x0002","connection.autoconnect","no"]
