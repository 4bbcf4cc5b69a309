//go:build integration

package hub_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
)

// TestRegisterCluster registers a cluster through the API on the real
// broker: its keys reach the trust topic and its registration the config
// topic and the desired-state topic, signed by the hub; the answer names
// the events, durable; the ledger lists it.
func TestRegisterCluster(t *testing.T) {
	r := newRig(t, 4)
	url := r.start()
	root := r.client(url, "root")
	res, _ := r.register(root, "prod-eu", map[string]string{"env": "prod"})
	if len(res.Events) != 1 || res.Events[0].Type != events.TypeClusterRegistered || res.Events[0].Generation != 1 || res.Events[0].Offset == nil {
		t.Fatalf("result %+v, want one durable registration at generation 1", res)
	}
	config := r.decoded(r.records(events.TopicConfig))
	if len(config) != 1 || config[0].Event.ID() != res.Events[0].ID || config[0].Offset != *res.Events[0].Offset {
		t.Fatalf("config topic holds %d events, want the registration the answer names", len(config))
	}
	reg := config[0].Data.(*schemas.ClusterRegistered)
	if reg.Labels["env"] != "prod" || reg.SigningKeyID == "" || reg.SealingKeyID == "" {
		t.Errorf("registration %+v", reg)
	}
	trust := r.decoded(r.records(events.TopicTrust))
	if got := clusterKeysRegistered(trust); len(got) != 2 {
		t.Errorf("%d keys registered, want the signing and the sealing key", len(got))
	}
	desired := r.records(events.TopicDesired)
	if len(desired) != 1 || string(desired[0].Key) != "prod-eu" {
		t.Errorf("desired-state topic: %d records, want the registration keyed by the cluster", len(desired))
	}
	objs, err := root.Objects(t.Context(), "", api.KindClusters)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Name != "prod-eu" || objs[0].Generation != 1 {
		t.Errorf("objects %+v", objs)
	}
}

// TestConflictAndIdempotentRetry checks optimistic concurrency and
// idempotency keys: a stale expected generation gets 409 and writes
// nothing; a retried request with the same key is answered with the first
// one's events and writes nothing again, even on another replica.
func TestConflictAndIdempotentRetry(t *testing.T) {
	r := newRig(t, 4)
	url := r.start()
	root := r.client(url, "root")
	signing, sealing, _ := clusterKeys(t)
	zero := int64(0)
	req := api.ClusterRequest{Labels: map[string]string{"env": "dev"}, SigningKey: signing, SealingKey: sealing, ExpectedGeneration: &zero}
	first, err := root.RegisterCluster(t.Context(), "c1", req, api.WriteOptions{IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := root.RegisterCluster(t.Context(), "c1", req, api.WriteOptions{IdempotencyKey: "k1"})
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if !again.Replayed || !cmp.Equal(again.Events, first.Events) {
		t.Errorf("retry answered %+v, want the first answer %+v, replayed", again, first)
	}
	// Without the key, the same request conflicts: the cluster exists.
	_, err = root.RegisterCluster(t.Context(), "c1", req, api.WriteOptions{})
	if api.StatusOf(err) != http.StatusConflict {
		t.Fatalf("register again = %v, want 409", err)
	}
	// A second replica honours the key from the log.
	other := r.client(r.start(), "root")
	replayed, err := other.RegisterCluster(t.Context(), "c1", req, api.WriteOptions{IdempotencyKey: "k1"})
	if err != nil || !replayed.Replayed || !cmp.Equal(replayed.Events, first.Events) {
		t.Errorf("retry on another replica = %+v, %v; want the first answer", replayed, err)
	}
	one := int64(1)
	update := api.ClusterRequest{Labels: map[string]string{"env": "staging"}, ExpectedGeneration: &one}
	if _, err := other.RegisterCluster(t.Context(), "c1", update, api.WriteOptions{}); err != nil {
		t.Fatalf("update at generation 1: %v", err)
	}
	_, err = root.RegisterCluster(t.Context(), "c1", update, api.WriteOptions{})
	var re *api.ResponseError
	if api.StatusOf(err) != http.StatusConflict || !asResponse(err, &re) || re.Body.Generation == nil || *re.Body.Generation != 2 {
		t.Fatalf("stale update = %v, want 409 naming generation 2", err)
	}
	if n := len(ofType(r.decoded(r.records(events.TopicConfig)), events.TypeClusterRegistered)); n != 2 {
		t.Errorf("%d registrations in the log, want 2 (the first and the update)", n)
	}
}

// TestAuthorizationAndAudit checks that every call by a principal,
// allowed or denied, becomes an audit event naming the actor, and that roles and cluster
// selectors are enforced.
func TestAuthorizationAndAudit(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	r.register(r.client(url, "root"), "prod", map[string]string{"env": "prod"})
	signing, sealing, _ := clusterKeys(t)
	cases := []struct {
		actor string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{"auditor", http.StatusForbidden},      // a viewer may not write
		{"dev-deployer", http.StatusForbidden}, // a deployer may not register clusters
	}
	for _, tc := range cases {
		_, err := r.client(url, tc.actor).RegisterCluster(t.Context(), "dev-1", api.ClusterRequest{SigningKey: signing, SealingKey: sealing}, api.WriteOptions{})
		if api.StatusOf(err) != tc.want {
			t.Errorf("%q registers = %v, want %d", tc.actor, err, tc.want)
		}
	}
	if _, err := r.client(url, "auditor").Objects(t.Context(), "", ""); err != nil {
		t.Errorf("viewer reads: %v", err)
	}
	// The dev deployer does not see the prod cluster.
	objs, err := r.client(url, "dev-deployer").Objects(t.Context(), "", "")
	if err != nil || len(objs) != 0 {
		t.Errorf("dev deployer lists %+v, %v; want nothing of prod", objs, err)
	}
	bad, err := http.Post(url+"/api/v1/applications", "application/json", bytes.NewReader([]byte(`{}`))) //nolint:noctx // loopback
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()

	audit := ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded)
	type row struct {
		Actor, Action, Outcome string
		Status                 int
	}
	var got []row
	for _, d := range audit {
		a := d.Data.(*schemas.AuditRecorded)
		got = append(got, row{a.Actor, a.Action, a.Outcome, a.StatusCode})
	}
	want := []row{
		{"root", "clusters.register", "allowed", 200},
		{"auditor", "clusters.register", "denied", 403},
		{"dev-deployer", "clusters.register", "denied", 403},
		{"auditor", "read", "allowed", 200},
		{"dev-deployer", "read", "allowed", 200},
	}
	// Calls without a credential are counted, not audited one by one
	// (TestEveryDecidedCallAudited).
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit records (-want +got):\n%s", diff)
	}
}

// TestRepositoryCredentialsSealed adds a repository with credentials and
// scans every record the hub wrote for them in plaintext; the cluster's
// sealing key opens them.
func TestRepositoryCredentialsSealed(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	root := r.client(url, "root")
	_, sk := r.register(root, "c1", nil)
	const secret = "s3cr3t-p4ssw0rd-for-the-scan"
	if _, err := root.PutRepository(t.Context(), "c1", "argocd", "charts", api.RepositoryRequest{URL: "https://git.example/charts.git",
		Credentials: map[string]string{"username": "bot", "password": secret}}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []events.Topic{events.TopicConfig, events.TopicDesired, events.TopicAudit, events.TopicTrust} {
		for _, rec := range r.records(role) {
			if bytes.Contains(rec.Value, []byte(secret)) {
				t.Errorf("%s/%d@%d holds the password in plaintext", rec.Topic, rec.Partition, rec.Offset)
			}
			for _, h := range rec.Headers {
				if bytes.Contains(h.Value, []byte(secret)) {
					t.Errorf("%s/%d@%d header %s holds the password", rec.Topic, rec.Partition, rec.Offset, h.Key)
				}
			}
		}
	}
	repos := ofType(r.decoded(r.records(events.TopicConfig)), events.TypeRepositoryUpserted)
	if len(repos) != 1 {
		t.Fatalf("%d repository events, want 1", len(repos))
	}
	plain, err := events.Open(*repos[0].Data.(*schemas.RepositoryUpserted).Credentials, sk)
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]string
	if err := json.Unmarshal(plain, &creds); err != nil || creds["password"] != secret {
		t.Errorf("sealed credentials open to %q, %v", plain, err)
	}

	// Sent again sealed, as a redrive does, they pass as they are; sealed
	// to another key, broken, or with credentials too, they are refused
	// and nothing is written.
	was := repos[0].Data.(*schemas.RepositoryUpserted).Credentials
	sealed := api.RepositoryRequest{URL: "https://git.example/charts.git", Sealed: &api.SealedCredentials{KeyID: was.KeyID, Ciphertext: was.Ciphertext}}
	if _, err := root.PutRepository(t.Context(), "c1", "argocd", "charts", sealed, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req    api.RepositoryRequest
		status int
		want   string
	}{
		{api.RepositoryRequest{URL: sealed.URL, Sealed: &api.SealedCredentials{KeyID: "other", Ciphertext: was.Ciphertext}}, http.StatusConflict, "the cluster's sealing key is now"},
		{api.RepositoryRequest{URL: sealed.URL, Sealed: &api.SealedCredentials{KeyID: was.KeyID, Ciphertext: "bm8="}}, http.StatusBadRequest, "sealed.ciphertext"},
		{api.RepositoryRequest{URL: sealed.URL, Sealed: sealed.Sealed, Credentials: map[string]string{"password": "x"}}, http.StatusBadRequest, "not both"},
	} {
		_, err := root.PutRepository(t.Context(), "c1", "argocd", "charts", tc.req, api.WriteOptions{})
		if api.StatusOf(err) != tc.status || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("PutRepository(%+v) = %v, want %d with %q", tc.req.Sealed, err, tc.status, tc.want)
		}
	}
	repos = ofType(r.decoded(r.records(events.TopicConfig)), events.TypeRepositoryUpserted)
	if len(repos) != 2 || *repos[1].Data.(*schemas.RepositoryUpserted).Credentials != *was {
		t.Fatalf("%d repository events, want 2, the second with the credentials as sealed", len(repos))
	}
	if plain, err := events.Open(*repos[1].Data.(*schemas.RepositoryUpserted).Credentials, sk); err != nil || !bytes.Contains(plain, []byte(secret)) {
		t.Errorf("the credentials passed on open to %q, %v", plain, err)
	}
}

// TestDeregisterRevokesKeys deregisters a cluster: the deregistration is
// in the log, its keys are revoked on the trust topic, and later writes to
// it are refused with a hint.
func TestDeregisterRevokesKeys(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	root := r.client(url, "root")
	r.register(root, "gone", nil)
	if _, err := root.DeregisterCluster(t.Context(), "gone", "decommissioned", api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	trust := r.decoded(r.records(events.TopicTrust))
	if n := len(ofType(trust, events.TypeKeyRevoked)); n != 2 {
		t.Errorf("%d keys revoked, want 2", n)
	}
	_, err := root.PutRepository(t.Context(), "gone", "argocd", "r", api.RepositoryRequest{URL: "https://x"}, api.WriteOptions{})
	var re *api.ResponseError
	if api.StatusOf(err) != http.StatusNotFound || !asResponse(err, &re) || !contains(re.Body.Hint, "argosy cluster register gone") {
		t.Errorf("write to a deregistered cluster = %v, want 404 with a hint", err)
	}
}

// TestJoinToken registers a cluster without keys: the answer carries a
// one-time join token whose hash alone is in the log. A spoke proving it
// registers its keys; the token is then used up. A wrong token, a token
// for another cluster and an expired one are refused, and each attempt is
// audited.
func TestJoinToken(t *testing.T) {
	r := newRig(t, 2)
	url := r.start()
	root := r.client(url, "root")
	anon, err := api.NewClient(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := root.RegisterCluster(t.Context(), "edge-1", api.ClusterRequest{Labels: map[string]string{"env": "edge"}}, api.WriteOptions{})
	if err != nil || res.JoinToken == "" || res.JoinTokenExpiresAt == nil {
		t.Fatalf("register without keys = %+v, %v; want a join token", res, err)
	}
	other, err := root.RegisterCluster(t.Context(), "edge-2", api.ClusterRequest{JoinTokenTTL: "1s"}, api.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range r.records(events.TopicConfig) {
		if bytes.Contains(rec.Value, []byte(res.JoinToken)) {
			t.Error("the join token is in the log in the clear")
		}
	}
	signing, sealing, _ := clusterKeys(t)
	join := func(cluster, token string) error {
		_, err := anon.Join(t.Context(), cluster, api.JoinRequest{Token: token, SigningKey: signing, SealingKey: sealing})
		return err
	}
	if err := join("edge-1", res.JoinToken+"x"); api.StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("a wrong token = %v, want 401", err)
	}
	if err := join("edge-2", res.JoinToken); api.StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("edge-1's token for edge-2 = %v, want 401", err)
	}
	if err := join("edge-1", res.JoinToken); err != nil {
		t.Fatalf("join: %v", err)
	}
	if err := join("edge-1", res.JoinToken); api.StatusOf(err) != http.StatusConflict {
		t.Errorf("the token again = %v, want 409", err)
	}
	time.Sleep(1500 * time.Millisecond)
	err = join("edge-2", other.JoinToken)
	var re *api.ResponseError
	if api.StatusOf(err) != http.StatusUnauthorized || !asResponse(err, &re) || !contains(re.Body.Error, "expired") {
		t.Errorf("an expired token = %v, want 401 saying it expired", err)
	}
	objs, err := root.Objects(t.Context(), "edge-1", api.KindClusters)
	if err != nil || len(objs) != 1 || objs[0].Generation != 2 || objs[0].Labels["env"] != "edge" {
		t.Errorf("edge-1 after joining: %+v, %v", objs, err)
	}
	regs := ofType(r.decoded(r.records(events.TopicConfig)), events.TypeClusterRegistered)
	last := regs[len(regs)-1].Data.(*schemas.ClusterRegistered)
	if last.Cluster != "edge-1" || last.SigningKeyID == "" || last.JoinToken != nil {
		t.Errorf("the joined registration %+v: want keys and no token", last)
	}
	if n := len(clusterKeysRegistered(r.decoded(r.records(events.TopicTrust)))); n != 2 {
		t.Errorf("%d keys registered, want edge-1's two", n)
	}
	outcomes := map[string]int{}
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		if a := d.Data.(*schemas.AuditRecorded); a.Action == "clusters.join" {
			outcomes[a.Outcome]++
		}
	}
	if outcomes["allowed"] != 1 || outcomes["denied"] != 3 || outcomes["failed"] != 1 {
		t.Errorf("join attempts audited %v, want 1 allowed, 3 denied (401) and 1 failed (409)", outcomes)
	}
}

// TestRelabelKeepsThePin checks that a change of labels that names no
// partition keeps the cluster's pin.
func TestRelabelKeepsThePin(t *testing.T) {
	r := newRig(t, 4)
	c := r.client(r.start(), "root")
	signing, sealing, _ := clusterKeys(t)
	three := int32(3)
	if _, err := c.RegisterCluster(t.Context(), "big", api.ClusterRequest{SigningKey: signing, SealingKey: sealing, Partition: &three}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.RegisterCluster(t.Context(), "big", api.ClusterRequest{Labels: map[string]string{"tier": "1"}}, api.WriteOptions{})
	if err != nil || res.Events[0].Partition != 3 {
		t.Fatalf("relabel = %+v, %v; want it written on partition 3", res, err)
	}
	objs, err := c.Objects(t.Context(), "big", api.KindClusters)
	if err != nil || len(objs) != 1 || objs[0].Pin == nil || *objs[0].Pin != 3 {
		t.Errorf("after relabelling: %+v, %v; want pinned to 3", objs, err)
	}
}

// TestAuditReadsOff checks that with WithAuditReads(false) successful reads,
// the hub's and the read API's, leave no audit record, while denials and
// writes still do.
func TestAuditReadsOff(t *testing.T) {
	r := newRig(t, 2)
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	url := r.start(hub.WithAuditReads(false), hub.WithReadAPI(read.New(store)))
	root := r.client(url, "root")
	if _, err := root.Objects(t.Context(), "", ""); err != nil {
		t.Fatal(err)
	}
	rc, err := api.NewClient(url, r.tokens["auditor"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Clusters(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client(url, "auditor").DeregisterCluster(t.Context(), "x", "", api.WriteOptions{}); api.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("viewer deregisters = %v, want 403", err)
	}
	var actions []string
	for _, d := range ofType(r.decoded(r.records(events.TopicAudit)), events.TypeAuditRecorded) {
		a := d.Data.(*schemas.AuditRecorded)
		actions = append(actions, a.Actor+" "+a.Action+" "+a.Outcome)
	}
	if want := []string{"auditor clusters.deregister denied"}; !slices.Equal(actions, want) {
		t.Errorf("audit records %q, want only %q", actions, want)
	}
}
