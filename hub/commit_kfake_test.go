package hub_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/hubtest"
)

// TestCommitErrorIsDecidedAgain: the broker answers a write's commit with
// an error that says nothing of the outcome (UNKNOWN_SERVER_ERROR, as a
// Kafka broker has when replicas fence each other). The hub fences the
// lane, reads the log to its end, decides again and writes: the caller
// gets the write, not a 500. (kfake stands in for the broker: a real one
// cannot be made to fail a commit on cue.)
func TestCommitErrorIsDecidedAgain(t *testing.T) {
	var failed atomic.Int32
	h := hubtest.Start(t, 1, func(c *kfake.Cluster) {
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
	})
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	res, err := h.Client.RegisterCluster(t.Context(), "c1", api.ClusterRequest{SigningKey: base64.StdEncoding.EncodeToString(pub),
		SealingKey: base64.StdEncoding.EncodeToString(sk.Public[:]), ExpectedGeneration: &zero}, api.WriteOptions{})
	if err != nil {
		t.Fatalf("register after a commit the broker failed: %v", err)
	}
	if failed.Load() < 2 || len(res.Events) != 1 || res.Events[0].Generation != 1 {
		t.Errorf("commits %d, answer %+v: want the failed commit, then one that wrote generation 1", failed.Load(), res)
	}
}

// TestCommitNeverSettledIs503: the broker answers every commit with an
// error that says nothing of the outcome. After its attempts the hub
// answers 503, which the CLI resends with the same idempotency key, not a
// 500.
func TestCommitNeverSettledIs503(t *testing.T) {
	h := hubtest.Start(t, 1, func(c *kfake.Cluster) {
		c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			end := req.(*kmsg.EndTxnRequest)
			if !end.Commit {
				return nil, nil, false
			}
			resp := end.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.UnknownServerError.Code
			return resp, nil, true
		})
	})
	zero := int64(0)
	_, err := h.Client.RegisterCluster(t.Context(), "c1", api.ClusterRequest{ExpectedGeneration: &zero}, api.WriteOptions{})
	if api.StatusOf(err) != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "same idempotency key") {
		t.Errorf("register while no commit settles: %v, want 503 saying to retry with the same key", err)
	}
}
