//go:build integration

package spoke_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// TestSealedRepositoryCredentials follows a private repository's password
// from the hub to Argo CD. The hub seals it to the cluster's key and
// appends it, with an Application that uses the repository, to the real
// broker; the spoke reads both, opens the credentials and writes Argo CD's
// repository Secret; the real repo-server then clones over HTTP with basic
// authentication and the Application syncs. Before the repository arrives,
// Argo CD cannot read the repository at all. Afterwards no record of any of
// the test's topics holds the password.
//
// Argo CD needs nothing special for an http:// URL: no "insecure" (which
// only skips TLS verification). The repo-server's git asks for the password
// through GIT_ASKPASS=argocd, looked up on PATH, which is why kubetest puts
// Argo CD's binary directory on its PATH.
func TestSealedRepositoryCredentials(t *testing.T) {
	w := newWorld(t)
	rev := w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private\ndata:\n  v: one\n"})
	const user = "fleet"
	pass := "pw-" + rand.Text()
	url := w.repo.Serve(t, user, pass)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := w.run(ctx, "spoke."+w.cluster)
	// Status deltas carry Argo CD's condition messages: the leak check
	// below covers them too.
	rep := w.reporter()
	reported := make(chan error, 1)
	go func() { reported <- rep.Run(ctx, newWatcher(t, w.dyn)) }()

	name := "private-" + w.ns
	apps := w.dyn.Resource(kubetest.ApplicationGVR).Namespace(kubetest.ArgoNamespace)
	app := w.privateApp(name, url)
	w.publish(w.hub, app)
	t.Cleanup(func() {
		if err := apps.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete application: %v", err)
		}
	})

	t.Run("without the repository Argo CD cannot read it", func(t *testing.T) {
		a := kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			return condition(a, "ComparisonError", "authentication required") != ""
		})
		t.Logf("before the repository: %s", condition(a, "ComparisonError", ""))
	})

	repoRef := spoke.Ref{Kind: spoke.KindRepository, Namespace: kubetest.ArgoNamespace, Name: "private-" + w.ns}
	repo := w.sealedRepository(repoRef, url, map[string]string{"username": user, "password": pass})
	w.publish(w.hub, repo)
	t.Cleanup(func() {
		if err := w.argo.Delete(context.Background(), repoRef, false); err != nil {
			t.Logf("delete repository: %v", err)
		}
	})

	t.Run("with the sealed credentials the Application syncs", func(t *testing.T) {
		kubetest.WaitApplication(t, apps, name, func(a *unstructured.Unstructured) bool {
			return str(a, "status", "sync", "status") == "Synced" && str(a, "status", "health", "status") == "Healthy" &&
				str(a, "status", "sync", "revision") == rev
		})
		got := w.acks(func(m map[string]string, _ int) bool { return m[app.ID()] != "" && m[repo.ID()] != "" })
		if got[app.ID()] != "applied" || got[repo.ID()] != "applied" {
			t.Errorf("acknowledgements: application %q, repository %q; want both applied", got[app.ID()], got[repo.ID()])
		}
		s, err := kubetest.Clientset(t, kubetest.Current(t).Admin).CoreV1().Secrets(repoRef.Namespace).Get(t.Context(), argocd.RepositorySecretPrefix+repoRef.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Data["url"]) != url || string(s.Data["username"]) != user || string(s.Data["password"]) != pass {
			t.Errorf("repository Secret holds url %q user %q and a password of %d bytes; want %q %q and the sealed one",
				s.Data["url"], s.Data["username"], len(s.Data["password"]), url, user)
		}
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-reported; err != nil {
		t.Fatal(err)
	}
	t.Run("the password is in no record", func(t *testing.T) {
		// The repository's URL travels in plaintext: finding it shows that
		// the search sees what the records hold.
		w.noSecretInTopics(t, url, pass, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	})
}

// privateApp is an Application upsert for the repository at url, synced
// automatically as soon as Argo CD can read it.
func (w *world) privateApp(name, url string) *event.Event {
	spec, err := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": url, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns},
		"syncPolicy":  map[string]any{"automated": map[string]any{}}})
	if err != nil {
		w.t.Fatal(err)
	}
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	return w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
}

// sealedRepository is what the hub appends for a private git repository:
// its credentials sealed to the cluster's public sealing key, which is all
// the hub holds of it.
func (w *world) sealedRepository(ref spoke.Ref, url string, creds map[string]string) *event.Event {
	plain, err := json.Marshal(creds)
	if err != nil {
		w.t.Fatal(err)
	}
	sealed, err := events.Seal(w.keys.Sealing.Public, plain)
	if err != nil {
		w.t.Fatal(err)
	}
	res := schemas.Resource{Cluster: w.cluster, Namespace: ref.Namespace, Name: ref.Name, Generation: 1}
	subj := events.Subject{Cluster: w.cluster, Kind: "repositories", Namespace: res.Namespace, Name: res.Name}
	e, err := events.New("//argosy.dev/hub/test", events.TypeRepositoryUpserted, subj.String(), w.cluster,
		schemas.RepositoryUpserted{Resource: res, URL: url, Type: "git", Credentials: &sealed})
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

// condition returns the message of the Application's condition of type typ
// whose message contains text, or "".
func condition(a *unstructured.Unstructured, typ, text string) string {
	conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		msg, _ := m["message"].(string)
		if m["type"] == typ && strings.Contains(msg, text) {
			return msg
		}
	}
	return ""
}

func str(a *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(a.Object, path...)
	return s
}

// noSecretInTopics reads every record of every topic of the world, as the
// broker lists them, from the start to the current end, and fails if any
// key, value, header name or header value contains one of secrets, or if
// none contains plain.
func (w *world) noSecretInTopics(t *testing.T, plain string, secrets ...string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkatest.Client(t))
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(w.topics[events.TopicConfig], events.DefaultTopics("")[events.TopicConfig])
	var topics []string
	for _, name := range listed.Names() {
		if strings.HasPrefix(name, prefix) {
			topics = append(topics, name)
		}
	}
	for _, name := range w.topics {
		if !slices.Contains(topics, name) {
			t.Fatalf("topic %s is not listed; listed %v", name, topics)
		}
	}
	recs := readAll(ctx, t, adm, topics)
	type field struct {
		name string
		b    []byte
	}
	perTopic := map[string]int{}
	plainSeen := 0
	for _, r := range recs {
		perTopic[r.Topic]++
		fields := []field{{"key", r.Key}, {"value", r.Value}}
		for _, h := range r.Headers {
			fields = append(fields, field{"header name", []byte(h.Key)}, field{"header " + h.Key, h.Value})
		}
		for _, f := range fields {
			if bytes.Contains(f.b, []byte(plain)) {
				plainSeen++
			}
			for _, s := range secrets {
				if bytes.Contains(f.b, []byte(s)) {
					t.Errorf("%s %d@%d: the %s holds a secret", r.Topic, r.Partition, r.Offset, f.name)
				}
			}
		}
	}
	t.Logf("read %d records: %v; %d fields hold %q", len(recs), perTopic, plainSeen, plain)
	if plainSeen == 0 {
		t.Errorf("no record holds %q: the search does not see what the records hold", plain)
	}
	// The check means something only if the credentials and their effects
	// were there to be read.
	if perTopic[w.topics[events.TopicConfig]] < 2 || perTopic[w.topics[events.TopicStatus]] < 2 {
		t.Errorf("records per topic %v: want the config events and the acknowledgements", perTopic)
	}
}

// readAll reads every record of topics, from the start to the end offsets
// the broker reports now.
func readAll(ctx context.Context, t *testing.T, adm *kadm.Client, topics []string) []*kgo.Record {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]map[int32]kgo.Offset{}
	left := map[string]map[int32]int64{} // the end offsets not reached yet
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return // empty
		}
		if from[o.Topic] == nil {
			from[o.Topic], left[o.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
		}
		from[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		left[o.Topic][o.Partition] = o.Offset
	})
	cl := kafkatest.Client(t, kgo.ConsumePartitions(from))
	var recs []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d records read; still to read %v: %v", len(recs), left, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s %d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			recs = append(recs, r)
			if end, ok := left[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(left[r.Topic], r.Partition)
				if len(left[r.Topic]) == 0 {
					delete(left, r.Topic)
				}
			}
		}
	}
	return recs
}
