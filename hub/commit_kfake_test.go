package hub_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
)

// TestCommitErrorIsDecidedAgain: the broker answers a write's commit with
// an error that says nothing of the outcome (UNKNOWN_SERVER_ERROR, as a
// Kafka broker has when replicas fence each other). The hub fences the
// lane, reads the log to its end, decides again and writes: the caller
// gets the write, not a 500. (kfake stands in for the broker: a real one
// cannot be made to fail a commit on cue.)
func TestCommitErrorIsDecidedAgain(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var failed atomic.Int32
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		end := req.(*kmsg.EndTxnRequest)
		if !end.Commit || failed.Add(1) != 1 {
			return nil, nil, false
		}
		resp := end.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil, true
	})
	conn := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	topics := events.DefaultTopics("")
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := events.EnsureTopics(ctx, kadm.NewClient(cl), topics, events.TopicPlan(1, 1), 1, 1); err != nil {
		t.Fatal(err)
	}
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	tok, entry, err := hub.NewToken("root", hub.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.New(conn, signer, []events.Key{events.HubAnchor("hub", signer.Public())}, []hub.Token{entry}, hub.WithTopics(topics),
		hub.WithListener(ln), hub.WithDecoderOptions(events.AcceptCreateTime()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/readyz") //nolint:noctx // a loopback probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub never got ready")
		}
	}
	hc, err := api.NewClient(url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	res, err := hc.RegisterCluster(ctx, "c1", api.ClusterRequest{SigningKey: base64.StdEncoding.EncodeToString(pub),
		SealingKey: base64.StdEncoding.EncodeToString(sk.Public[:]), ExpectedGeneration: &zero}, api.WriteOptions{})
	if err != nil {
		t.Fatalf("register after a commit the broker failed: %v", err)
	}
	if failed.Load() < 2 || len(res.Events) != 1 || res.Events[0].Generation != 1 {
		t.Errorf("commits %d, answer %+v: want the failed commit, then one that wrote generation 1", failed.Load(), res)
	}
}
