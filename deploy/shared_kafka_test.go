//go:build integration

package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/deploy"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/system"
)

// install is one Argosy install on a shared Kafka: its hub, projector and
// the spoke of cluster aclCluster, each as its own KafkaUser, with the
// names the binaries give them for the install's topic prefix.
type install struct {
	k      deploy.Kafka
	n      deploy.Names
	topics events.Topics
	client *api.Client
	store  *sqlstore.Store
	fleet  *sim.Fleet
}

// startInstall runs k's hub and projector (one system.System, each part
// as its own Kafka user) and spoke on a, in g, until ctx ends.
func startInstall(t *testing.T, ctx context.Context, g *errgroup.Group, a *aclBroker, k deploy.Kafka) *install {
	t.Helper()
	in := &install{k: k, n: k.Names(), topics: events.DefaultTopics(k.TopicPrefix)}
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}
	tok, entry, err := auth.NewToken("admin", auth.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if in.store, err = sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "views.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.store.Close() })
	sys, err := system.New(a.conn(in.n.HubUser), signer, anchors, system.WithTopicPrefix(k.TopicPrefix), system.WithListen("127.0.0.1:0"),
		system.WithTokens(entry), system.WithStore(in.store), system.WithFold(""), system.WithFoldConn(a.conn(in.n.ProjectorUser)))
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return sys.Run(ctx) })
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := sys.WaitReady(wctx); err != nil {
		t.Fatalf("%s never ready: %v", k.TopicPrefix, err)
	}
	if in.client, err = api.NewClient(sys.URL(), tok, nil); err != nil {
		t.Fatal(err)
	}
	in.fleet, err = sim.NewFleet(sim.FleetConfig{Clusters: 1, Prefix: "acl", Hub: in.client, HubKey: signer.Public(),
		Conn: a.conn(in.n.SpokeUser(aclCluster)), Topics: in.topics, TopicPrefix: k.TopicPrefix, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return in.fleet.Run(ctx) })
	return in
}

// app is an Application manifest named name.
func app(name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":%q,"namespace":"argocd"},
	"spec":{"project":"default","source":{"repoURL":"https://git.example/apps.git","path":"web","targetRevision":"main"},
	"destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}}`, name)
}

// TestTwoInstallsShareOneKafka runs two installs, with topic prefixes a.
// and b., on one broker that enforces the ACLs the generator gives each
// install's KafkaUsers (a cluster of the same name in both): both hubs
// answer every write while the other writes too (neither fences the
// other's transactions), each spoke applies only its own install's
// Applications and each projector folds only its own; and A's users are
// refused B's topics, groups and transactional ids.
func TestTwoInstallsShareOneKafka(t *testing.T) {
	ka, kb := deploy.DefaultKafka(), deploy.DefaultKafka()
	ka.TopicPrefix, kb.TopicPrefix = "a.", "b."
	a := startACLBroker(t, ka, kb)
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	}()
	installs := []*install{startInstall(t, gctx, g, a, ka), startInstall(t, gctx, g, a, kb)}
	for _, in := range installs {
		waitFor(t, in.k.TopicPrefix+"'s cluster to join", func() bool {
			c, ok, err := in.store.Cluster(ctx, aclCluster)
			return err == nil && ok && c.Beat != nil
		})
	}

	// Both hubs write at once, round after round; every write succeeds.
	const rounds = 4
	var w errgroup.Group
	for _, in := range installs {
		w.Go(func() error {
			for i := range rounds {
				name := fmt.Sprintf("%sweb-%d", strings.TrimSuffix(in.k.TopicPrefix, "."), i)
				if _, err := in.client.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{aclCluster}, Manifest: app(name)},
					api.WriteOptions{}); err != nil {
					return fmt.Errorf("%s write %d: %w", in.k.TopicPrefix, i, err)
				}
			}
			return nil
		})
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}

	for _, in := range installs {
		own := strings.TrimSuffix(in.k.TopicPrefix, ".") + "web-"
		waitFor(t, in.k.TopicPrefix+"'s projector to show its Applications applied", func() bool {
			apps, err := in.store.Apps(ctx, projector.AppFilter{Cluster: aclCluster})
			if err != nil || len(apps) != rounds {
				return false
			}
			for _, ap := range apps {
				if ap.Desired == nil || ap.Observed == nil || ap.Observed.AppliedGeneration != ap.Desired.Generation {
					return false
				}
			}
			return true
		})
		apps, err := in.store.Apps(ctx, projector.AppFilter{Cluster: aclCluster})
		if err != nil {
			t.Fatal(err)
		}
		for _, ap := range apps {
			if !strings.HasPrefix(ap.Name, own) {
				t.Errorf("%s's projector folded %s", in.k.TopicPrefix, ap.Name)
			}
		}
		c, ok := in.fleet.Cluster(aclCluster)
		if !ok {
			t.Fatalf("%s: no simulated cluster", in.k.TopicPrefix)
		}
		for _, ref := range c.Applications() {
			if !strings.HasPrefix(ref.Name, own) {
				t.Errorf("%s's spoke applied %s", in.k.TopicPrefix, ref.Name)
			}
		}
	}

	t.Run("each install's names", func(t *testing.T) { checkNames(t, a, installs) })
	t.Run("A is refused B's", func(t *testing.T) { refusedOther(t, a, installs[0], installs[1]) })
}

// checkNames: every group and transactional id on the broker begins with
// one install's topic prefix, and each install has its projector's group
// and its hub's transactional ids there. Its spoke has none: an agent
// keeps its config offset in its own state.
func checkNames(t *testing.T, a *aclBroker, installs []*install) {
	adm := kadm.NewClient(a.b.Client(t))
	groups, err := adm.ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	txns, err := adm.ListTransactions(t.Context(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(groups.Groups(), txns.TransactionalIDs()...) {
		if !slices.ContainsFunc(installs, func(in *install) bool { return strings.HasPrefix(name, in.k.TopicPrefix) }) {
			t.Errorf("%s is no install's own", name)
		}
	}
	for _, in := range installs {
		p := in.k.TopicPrefix
		if want := p + "argosy-projector"; !slices.Contains(groups.Groups(), want) {
			t.Errorf("no group %s among %v", want, groups.Groups())
		}
		if spoke := p + "argosy-spoke." + aclCluster; slices.Contains(groups.Groups(), spoke) {
			t.Errorf("the spoke holds a group, %s", spoke)
		}
		if !slices.ContainsFunc(txns.TransactionalIDs(), func(id string) bool { return strings.HasPrefix(id, p+"argosy-hub-config-") }) {
			t.Errorf("no transactional id begins with %sargosy-hub-config-: %v", p, txns.TransactionalIDs())
		}
	}
}

// refusedOther checks that a's users may touch nothing of b's.
func refusedOther(t *testing.T, a *aclBroker, ia, ib *install) {
	produce := func(topic string) func(*kgo.Client) error {
		return func(cl *kgo.Client) error {
			return cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
		}
	}
	commit := func(group string) func(*kgo.Client) error {
		return func(cl *kgo.Client) error {
			var o kadm.Offsets
			o.Add(kadm.Offset{Topic: ia.topics[events.TopicConfig], Partition: 0, At: 0})
			resp, err := kadm.NewClient(cl).CommitOffsets(t.Context(), group, o)
			return errors.Join(err, resp.Error())
		}
	}
	refused(t, a, ia.n.HubUser, "write B's config topic", produce(ib.topics[events.TopicConfig]))
	refused(t, a, ia.n.HubUser, "read B's config topic", fetch(ib.topics[events.TopicConfig]))
	refused(t, a, ia.n.ProjectorUser, "read B's status topic", fetch(ib.topics[events.TopicStatus]))
	refused(t, a, ia.n.ProjectorUser, "commit in B's projector group", commit(ib.n.ProjectorGroup))
	refused(t, a, ia.n.SpokeUser(aclCluster), "read B's config topic", fetch(ib.topics[events.TopicConfig]))
	refused(t, a, ia.n.SpokeUser(aclCluster), "write B's status topic", produce(ib.topics[events.TopicStatus]))
	refused(t, a, ia.n.SpokeUser(aclCluster), "commit in B's spoke group", commit(ib.n.SpokeGroup(aclCluster)))
	refused(t, a, ia.n.ReaderUser, "read B's audit topic", fetch(ib.topics[events.TopicAudit]))
	refused(t, a, ia.n.HubUser, "use B's transactional id", func(cl *kgo.Client) error {
		txn, err := kgo.NewClient(append(a.conn(ia.n.HubUser), kgo.RequestRetries(0), kgo.TransactionalID(ib.n.HubTransactionalPrefix+"0"))...)
		if err != nil {
			return err
		}
		defer txn.Close()
		_, _, err = txn.ProducerID(t.Context())
		return err
	})
}
