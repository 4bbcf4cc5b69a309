package system_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/system"
)

// TestNewRefuses: New names each part that is missing or given without
// what it needs, all at once, and binds nothing then.
func TestNewRefuses(t *testing.T) {
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}
	conn := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	ops := func(system.Check) http.Handler { return http.NotFoundHandler() }
	for _, tc := range []struct {
		name string
		opts []system.Option
		want []string
	}{
		{"no address", nil, []string{"an address or a listener"}},
		{"a dashboard without a store", []system.Option{system.WithListen("127.0.0.1:0"), system.WithDashboard()}, []string{"need a store"}},
		{"a fold without a store", []system.Option{system.WithListen("127.0.0.1:0"), system.WithFold("")}, []string{"need a store"}},
		{"an operations server without an address", []system.Option{system.WithListen("127.0.0.1:0"), system.WithOpsServer("", ops)},
			[]string{"both an address and a handler"}},
		{"all at once", []system.Option{system.WithFold(""), system.WithOpsServer("127.0.0.1:0", nil)},
			[]string{"need a store", "an address or a listener", "both an address and a handler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := system.New(conn, signer, anchors, tc.opts...)
			if err == nil {
				t.Fatal("New took it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestNewClosesTheListenerItBound: a hub New refuses (its key is not
// among the anchors) leaves the address New bound free again.
func TestNewClosesTheListenerItBound(t *testing.T) {
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	other, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, other.Public())}
	conn := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	// Another process may take the freed port before the first New: then
	// try another one, a few times.
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = system.New(conn, signer, anchors, system.WithListen(addr))
		if err != nil && strings.Contains(err.Error(), "system: listen:") && attempt < 5 {
			continue
		}
		for i := range 2 { // the second would find the address taken
			if i > 0 {
				_, err = system.New(conn, signer, anchors, system.WithListen(addr))
			}
			if err == nil || !strings.Contains(err.Error(), "not among the trust anchors") {
				t.Fatalf("New #%d on %s = %v, want the hub's refusal", i+1, addr, err)
			}
		}
		return
	}
}

// TestNewClosesAGivenListenerOnEveryRefusal: a listener given with
// WithListener is the System's from New on, whichever check refuses.
func TestNewClosesAGivenListenerOnEveryRefusal(t *testing.T) {
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	other, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	conn := []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}
	for name, c := range map[string]struct {
		anchors []events.Key
		opts    []system.Option
	}{
		"options":     {[]events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}, []system.Option{system.WithDashboard()}},
		"hub refuses": {[]events.Key{events.HubAnchor(hub.HubKeyOwner, other.Public())}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := system.New(conn, signer, c.anchors, append(c.opts, system.WithListener(ln))...); err == nil {
				t.Fatal("New accepted")
			}
			if err := ln.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("the listener was left open (Close = %v)", err)
			}
		})
	}
}
