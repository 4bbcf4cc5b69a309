package cluster

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/spoke"
)

// ignore leaves out of a comparison of options what is not a flag's.
var ignore = cmp.Options{cmpopts.IgnoreUnexported(apicmd.Options{}, apicmd.WriteFlags{}),
	cmpopts.IgnoreFields(ClusterRegisterOptions{}, "IO"), cmpopts.IgnoreFields(ClusterLabelOptions{}, "IO"),
	cmpopts.IgnoreFields(ClusterDeregisterOptions{}, "IO"), cmpopts.IgnoreFields(ClusterListOptions{}, "IO")}

func ptr[T any](v T) *T { return &v }

// checkUsage checks that err is a usage error holding want.
func checkUsage(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("error %v, want the usage error %q", err, want)
	}
}

func TestClusterRegisterFlags(t *testing.T) {
	table := apicmd.WriteFlags{Output: "table"}
	m := ManifestOptions{KafkaName: "argosy", KafkaNamespace: "kafka", Namespace: "argosy-spoke", Chart: "./deploy/helm/argosy", HubKeyFile: "hub.pub"}
	printing := m
	printing.Print, printing.Bootstrap, printing.HubKeyFile = true, "kafka.example.com:9094", "k/hub.pub"
	tests := []struct {
		args    []string
		want    ClusterRegisterOptions
		wantErr string
	}{
		{args: []string{"prod", "--labels", "env=prod,region=eu", "--keys-dir", "/k"},
			want: ClusterRegisterOptions{Write: table, Name: "prod", Labels: map[string]string{"env": "prod", "region": "eu"}, KeysFile: "/k/public.json", KeysDir: "/k", Manifests: m}},
		{args: []string{"prod", "--print-manifests", "--kafka-bootstrap", "kafka.example.com:9094", "--hub-public-key", "k/hub.pub"},
			want: ClusterRegisterOptions{Write: table, Name: "prod", Manifests: printing}},
		{args: []string{"prod", "--print-manifests", "--public-keys", "p.json"}, wantErr: "--print-manifests needs --keys-dir, not --public-keys"},
		{args: []string{"prod", "--print-manifests", "--kafka-bootstrap", "kafka.example.com:9094", "--hub-public-key", "k/hub.pub", "--hub-url", "https://hub.example.com/"},
			want: ClusterRegisterOptions{Write: table, Name: "prod", Manifests: withHubURL(printing, "https://hub.example.com")}},
		{args: []string{"prod", "--print-manifests", "--hub-url", "hub.example.com"}, wantErr: `--hub-url "hub.example.com": want http(s)://HOST[:PORT]`},
		{args: []string{"prod", "--public-keys", "p.json", "--partition", "3", "--if-generation", "0", "--dry-run", "-o", "json", "--idempotency-key", "k1"},
			want: ClusterRegisterOptions{Write: apicmd.WriteFlags{Output: "json", DryRun: true, IdempotencyKey: "k1"}, Name: "prod", KeysFile: "p.json",
				Partition: ptr(int32(3)), IfGeneration: ptr(int64(0)), Manifests: m}},
		{args: []string{"prod", "--overwrite", "--labels", "env=dev"},
			want: ClusterRegisterOptions{Write: table, Name: "prod", Labels: map[string]string{"env": "dev"}, Overwrite: true, Manifests: m}},
		{args: []string{"prod", "--join-token-ttl", "2h"}, want: ClusterRegisterOptions{Write: table, Name: "prod", JoinTokenTTL: "2h", Manifests: m}},
		{args: []string{"prod", "--keys-dir", "d", "--public-keys", "f"}, wantErr: "give --keys-dir or --public-keys, not both"},
		{args: []string{"prod", "--keys-dir", "d", "--partition", "-1"}, wantErr: "--partition -1: want a partition number"},
		{args: []string{"prod", "--keys-dir", "d", "--if-generation", "-1"}, wantErr: "--if-generation -1: want a generation"},
		{args: []string{"prod", "--keys-dir", "d", "-o", "xml"}, wantErr: `unknown output format "xml"`},
		{args: []string{"prod", "--keys-dir", "d", "--idempotency-key", "a b"}, wantErr: "--idempotency-key: want a key without white space"},
		{args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := cmdtest.Parse(t, NewCmdClusterRegister, tc.args)
			if tc.wantErr != "" {
				checkUsage(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, ignore); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterLabelDeregisterListFlags(t *testing.T) {
	table := apicmd.WriteFlags{Output: "table"}
	got, err := cmdtest.Parse(t, NewCmdClusterLabel, []string{"prod", "tier=1", "canary-", "empty=", "--overwrite", "--if-generation", "4"})
	want := ClusterLabelOptions{Write: table, Name: "prod", Set: map[string]string{"tier": "1", "empty": ""}, Remove: []string{"canary"},
		Overwrite: true, IfGeneration: ptr(int64(4))}
	if err != nil || !cmp.Equal(want, *got, ignore) {
		t.Errorf("label: %v (-want +got):\n%s", err, cmp.Diff(want, *got, ignore))
	}
	for args, wantErr := range map[string]string{
		"prod":            "requires at least 2 arg(s), only received 1",
		"prod tier":       `"tier": want K=V to set a label or K- to remove it`,
		"prod =1":         `"=1": want K=V`,
		"prod a=1 a-":     `label "a" is both set and removed`,
		"prod a=1 -o xml": `unknown output format "xml"`,
	} {
		_, err := cmdtest.Parse(t, NewCmdClusterLabel, strings.Fields(args))
		checkUsage(t, err, wantErr)
	}
	dereg, err := cmdtest.Parse(t, NewCmdClusterDeregister, []string{"prod", "--reason", "gone", "--if-generation", "2", "--dry-run"})
	wantDereg := ClusterDeregisterOptions{Write: apicmd.WriteFlags{Output: "table", DryRun: true}, Name: "prod", Reason: "gone", IfGeneration: ptr(int64(2))}
	if err != nil || !cmp.Equal(wantDereg, *dereg, ignore) {
		t.Errorf("deregister: %v (-want +got):\n%s", err, cmp.Diff(wantDereg, *dereg, ignore))
	}
	_, err = cmdtest.Parse(t, NewCmdClusterDeregister, nil)
	checkUsage(t, err, "accepts 1 arg(s), received 0")
	list, err := cmdtest.Parse(t, NewCmdClusterList, []string{"--deleted", "-o", "yaml"})
	if err != nil || !list.Deleted || list.Output != "yaml" {
		t.Errorf("list: %+v, %v", list, err)
	}
	_, err = cmdtest.Parse(t, NewCmdClusterList, []string{"extra"})
	checkUsage(t, err, `unknown command "extra"`)
}

func withHubURL(m ManifestOptions, u string) ManifestOptions {
	m.HubURL = u
	return m
}

// TestPrintManifestsRefusesALoopbackJoinURL: a CLI that reaches the hub
// through a port-forward would give the spoke 127.0.0.1 to join; without
// --hub-url it is refused before anything is registered (the join token
// is shown once).
func TestPrintManifestsRefusesALoopbackJoinURL(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	step{args: []string{"register", "prod", "--print-manifests"}, err: "give --hub-url"}.run(t, h, h.Admin)
	for _, r := range h.Requests() {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s was sent before the refusal", r.Method, r.Path)
		}
	}
	out, _, err := cmdtest.Run(t, NewCmdCluster, "cluster", "register", "prod", "--print-manifests", "--hub-url", "https://hub.example.com",
		"--kafka-bootstrap", "kafka.example.com:9094", "--server", h.URL, "--token", h.Admin)
	if err != nil || !strings.Contains(out, "spoke.join.hubURL=https://hub.example.com,") {
		t.Errorf("with --hub-url: %v\n%s", err, out)
	}
}

// keysDir writes a cluster's keys as argosy-spoke keygen does.
func keysDir(t *testing.T, cluster string) (string, spoke.Keys) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := spoke.GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := spoke.WriteKeys(dir, cluster, k); err != nil {
		t.Fatal(err)
	}
	return dir, k
}

// step is one command run against the hub.
type step struct {
	args   []string
	stdout string // the whole of it, when not empty
	stderr string
	err    string // part of the error, when it must fail
}

func (s step) run(t *testing.T, h *cmdtest.Hub, token string) {
	t.Helper()
	args := append(append([]string{"cluster"}, s.args...), "--server", h.URL, "--token", token)
	stdout, stderr, err := cmdtest.Run(t, NewCmdCluster, args...)
	switch {
	case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err)):
		t.Fatalf("%s: error\n%v\nwant it to hold\n%s", strings.Join(s.args, " "), err, s.err)
	case s.err == "" && err != nil:
		t.Fatalf("%s: %v", strings.Join(s.args, " "), err)
	}
	if s.stdout != "" && stdout != s.stdout {
		t.Errorf("%s: stdout\n%s\nwant\n%s", strings.Join(s.args, " "), stdout, s.stdout)
	}
	if stderr != s.stderr {
		t.Errorf("%s: stderr %q, want %q", strings.Join(s.args, " "), stderr, s.stderr)
	}
}

// lastBody decodes the body of the last request the hub received.
func lastBody(t *testing.T, h *cmdtest.Hub) (api.ClusterRequest, cmdtest.Request) {
	t.Helper()
	reqs := h.Requests()
	last := reqs[len(reqs)-1]
	var req api.ClusterRequest
	if last.Body != "" {
		if err := json.Unmarshal([]byte(last.Body), &req); err != nil {
			t.Fatal(err)
		}
	}
	return req, last
}

// TestClusterWrites registers, re-registers, labels, lists and
// deregisters a cluster against a hub, and checks what each sends and
// prints.
func TestClusterWrites(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	dir, keys := keysDir(t, "prod")
	// The registration is written to the config partition of the name
	// prod (3 of HubPartitions), the first record there; the pin to 2
	// applies from the next write.
	step{args: []string{"register", "prod", "--labels", "env=prod", "--keys-dir", dir, "--partition", "2"},
		stdout: "TYPE                CLUSTER  KIND      NAMESPACE  NAME  GENERATION  OFFSET\ncluster.registered  prod     clusters  -          prod  1           3@0\n"}.run(t, h, h.Admin)
	req, _ := lastBody(t, h)
	pub := keys.Public("prod")
	want := api.ClusterRequest{Labels: map[string]string{"env": "prod"}, Partition: ptr(int32(2)), SigningKey: pub[0].PublicKey,
		SealingKey: pub[1].PublicKey, ExpectedGeneration: ptr(int64(0))}
	if diff := cmp.Diff(want, req); diff != "" {
		t.Errorf("registration (-want +got):\n%s", diff)
	}
	step{args: []string{"register", "prod", "--labels", "env=prod", "--keys-dir", dir}, err: "the hub refused the request (409 Conflict): cluster prod already exists (generation 1)\n" +
		"  next: to change its labels: argosy cluster register prod --labels … --overwrite, or argosy cluster label prod K=V"}.run(t, h, h.Admin)
	step{args: []string{"register", "prod", "--labels", "env=staging", "--overwrite", "--dry-run"}, stderr: "Dry run: the hub wrote nothing.\n",
		stdout: "TYPE                CLUSTER  KIND      NAMESPACE  NAME  GENERATION  OFFSET\ncluster.registered  prod     clusters  -          prod  2           dry run\n"}.run(t, h, h.Admin)
	step{args: []string{"register", "prod", "--labels", "env=staging", "--overwrite"}}.run(t, h, h.Admin)
	req, _ = lastBody(t, h)
	want = api.ClusterRequest{Labels: map[string]string{"env": "staging"}, ExpectedGeneration: ptr(int64(1))}
	if diff := cmp.Diff(want, req); diff != "" {
		t.Errorf("overwrite (-want +got):\n%s", diff)
	}
	step{args: []string{"label", "prod", "tier=1", "env=dev"}, err: `label "env" already has a value (staging): pass --overwrite to change it`}.run(t, h, h.Admin)
	step{args: []string{"label", "prod", "tier=1", "env=dev", "--overwrite"}}.run(t, h, h.Admin)
	step{args: []string{"label", "prod", "env-", "-o", "json"}}.run(t, h, h.Admin)
	req, _ = lastBody(t, h)
	want = api.ClusterRequest{Labels: map[string]string{"tier": "1"}, ExpectedGeneration: ptr(int64(3))}
	if diff := cmp.Diff(want, req); diff != "" {
		t.Errorf("label (-want +got):\n%s", diff)
	}
	step{args: []string{"label", "nope", "a=b"}, err: `cluster "nope" is not registered; argosy cluster list shows those that are`}.run(t, h, h.Admin)
	step{args: []string{"list"}, stdout: "NAME  LABELS  GENERATION  PARTITION\nprod  tier=1  4           2 (pinned)\n"}.run(t, h, h.Viewer)
	step{args: []string{"deregister", "prod", "--if-generation", "3"}, err: "the hub refused the request (409 Conflict): cluster prod is at generation 4, not 3: it changed since you read it\n" +
		"  next: read its generation again (argosy app list, argosy cluster list), then retry"}.run(t, h, h.Admin)
	step{args: []string{"deregister", "prod", "--reason", "gone", "--if-generation", "4"}}.run(t, h, h.Admin)
	_, last := lastBody(t, h)
	if last.Method != "DELETE" || last.Query != "reason=gone" || last.Header.Get(api.HeaderIfMatch) != `"4"` {
		t.Errorf("deregister sent %s %s?%s If-Match %q", last.Method, last.Path, last.Query, last.Header.Get(api.HeaderIfMatch))
	}
	step{args: []string{"list"}, stderr: "No clusters.\n"}.run(t, h, h.Viewer)
	// A deregistered cluster keeps neither its labels nor its pin.
	step{args: []string{"list", "--deleted"}, stdout: "NAME  LABELS  GENERATION   PARTITION\nprod  -       5 (deleted)  2\n"}.run(t, h, h.Viewer)
}

// TestClusterWriteErrors checks what the cluster writes say when they
// are refused or given the wrong keys.
func TestClusterWriteErrors(t *testing.T) {
	cmdtest.Isolate(t)
	h := cmdtest.StartHub(t)
	dir, _ := keysDir(t, "other")
	step{args: []string{"register", "prod", "--keys-dir", dir}, err: filepath.Join(dir, "public.json") +
		`: the keys are cluster "other"'s, not "prod"'s: argosy-spoke keygen --cluster other wrote them`}.run(t, h, h.Admin)
	step{args: []string{"register", "prod", "--keys-dir", t.TempDir()}, err: "the cluster's public keys: open "}.run(t, h, h.Admin)
	step{args: []string{"register", "other", "--keys-dir", dir}, err: "the hub at " + h.URL + " refused the request (403 Forbidden): denied: viewer may not clusters.register: " +
		"role viewer, and it needs admin; the token from --token is good but may not do this"}.run(t, h, h.Viewer)
	step{args: []string{"register", "other", "--overwrite", "--keys-dir", dir, "--partition", "-2"}, err: "--partition -2: want a partition number"}.run(t, h, h.Admin)
	step{args: []string{"deregister", "ghost"}, err: "the hub refused the request (404 Not Found): cluster \"ghost\" is not registered\n  name: no such cluster\n" +
		"  next: argosy cluster register ghost --labels …, or argosy cluster list"}.run(t, h, h.Admin)
	if got := h.Objects(); len(got) != 0 {
		t.Errorf("the hub holds %+v after refusals only", got)
	}
}

func TestClusterWritesHelp(t *testing.T) {
	cmdtest.ReadCommandsHelp(t, NewCmdCluster, []string{"cluster", "list"}, []string{"cluster", "register"},
		[]string{"cluster", "label"}, []string{"cluster", "deregister"})
}
