package main

import (
	"strings"
	"testing"
)

func TestPrestopParsesClusterNodes(t *testing.T) {
	// The address field with and without a hostname; a failing replica.
	text := "aaa 10.0.0.1:6379@16379,shoal-0.shoal myself,master - 0 0 1 connected 0-5460\n" +
		"bbb 10.0.0.2:6379@16379 slave aaa 0 1 1 connected\n" +
		"ccc 10.0.0.3:6379@16379,shoal-2.shoal slave,fail aaa 0 1 1 disconnected\n"
	ns := parseNodeLines(text)
	me, ok := ns.myself()
	if !ok || me.id != "aaa" || me.addr != "10.0.0.1:6379" || !me.hasFlag("master") || len(me.slots) != 1 {
		t.Fatalf("myself = %+v", me)
	}
	if ns[2].hasFlag("fail?") || !ns[2].hasFlag("fail") {
		t.Fatalf("flags of %+v", ns[2])
	}
}

func TestPrestopArguments(t *testing.T) {
	var out, errb strings.Builder
	if code := prestop([]string{"0"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "invalid port") {
		t.Fatalf("port 0: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := prestop([]string{"6379", "-1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "invalid timeout") {
		t.Fatalf("timeout -1: %d %q", code, errb.String())
	}
	// Nothing listens on port 1: nothing to hand over, exit 0 at once.
	out.Reset()
	if code := prestop([]string{"1", "1"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "nothing to hand over") {
		t.Fatalf("no server: %d %q", code, out.String())
	}
}
