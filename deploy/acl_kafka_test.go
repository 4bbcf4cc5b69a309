//go:build integration

package deploy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/deploy"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector"
)

const aclCluster = "acl-000"

// aclBroker is a broker that enforces ACLs, with a SASL user per role
// holding exactly the ACLs of the role's KafkaUser in deploy/strimzi.
type aclBroker struct {
	b    *kafkatest.Broker
	addr string // the SASL listener's
}

// startACLBroker starts the broker with the topics and users of installs.
// With more than one install, each gets its topics and users; a user
// whose name two installs share holds the later install's ACLs only, as a
// KafkaUser applied again under the same name would.
func startACLBroker(t *testing.T, installs ...deploy.Kafka) *aclBroker {
	t.Helper()
	roles := map[string][]deploy.ACL{}
	for _, k := range installs {
		n := k.Names()
		roles[n.HubUser], roles[n.ProjectorUser], roles[n.SpokeUser(aclCluster)] = k.HubACLs(), k.ProjectorACLs(), k.SpokeACLs(aclCluster)
		roles[n.ReaderUser] = k.ReaderACLs()
	}
	opts := []kafkatest.Option{kafkatest.WithListeners(kafkatest.SASLPlaintext), kafkatest.WithAuthorizer()}
	for user := range roles {
		opts = append(opts, kafkatest.WithUser(user, "pw-"+user))
	}
	b := kafkatest.StartBroker(t, opts...)
	adm := kadm.NewClient(b.Client(t)) // PLAINTEXT: the super user
	for _, k := range installs {
		if err := events.EnsureTopics(t.Context(), adm, events.DefaultTopics(k.TopicPrefix), events.TopicPlan(2, 2), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	for user, acls := range roles {
		for _, a := range acls {
			res, err := adm.CreateACLs(t.Context(), aclBuilder(t, "User:"+user, a))
			if err != nil || len(res) == 0 {
				t.Fatalf("%s %+v: %v", user, a, err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatalf("%s %+v: %v", user, a, r.Err)
				}
			}
		}
	}
	return &aclBroker{b: b, addr: b.ListenerAddr(kafkatest.SASLPlaintext)}
}

// aclBuilder turns a KafkaUser's ACL into the broker's, as Strimzi's user
// operator does.
func aclBuilder(t *testing.T, principal string, a deploy.ACL) *kadm.ACLBuilder {
	t.Helper()
	var ops []kadm.ACLOperation
	for _, op := range a.Operations {
		o, err := kmsg.ParseACLOperation(op)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, o)
	}
	b := kadm.NewACLs().Allow(principal).AllowHosts().Operations(ops...)
	if a.Deny {
		b = kadm.NewACLs().Deny(principal).DenyHosts().Operations(ops...)
	}
	switch a.Type {
	case "topic":
		b = b.Topics(a.Name)
	case "group":
		b = b.Groups(a.Name)
	case "transactionalId":
		b = b.TransactionalIDs(a.Name)
	default:
		t.Fatalf("resource type %q", a.Type)
	}
	if a.Prefix {
		return b.ResourcePatternType(kadm.ACLPatternPrefixed)
	}
	return b.ResourcePatternType(kadm.ACLPatternLiteral)
}

// conn connects as user over SASL/SCRAM-SHA-512, as the user's KafkaUser
// would with its certificate.
func (a *aclBroker) conn(user string) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(a.addr), kgo.SASL(scram.Auth{User: user, Pass: "pw-" + user}.AsSha512Mechanism())}
}

// TestRolesWorkWithTheirACLs runs the hub, a projector and a cluster's
// spoke agent, each as its KafkaUser with only that user's ACLs, on a
// broker that enforces them: an Application written to the hub is applied
// by the spoke, and the projector folds the hub's change and the spoke's
// acknowledgement. Then each user is refused what its role must not do.
func TestRolesWorkWithTheirACLs(t *testing.T) {
	k := deploy.DefaultKafka()
	a := startACLBroker(t, k)
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	}()
	in := startInstall(t, gctx, g, a, k)
	n, topics, store := in.n, in.topics, in.store
	waitFor(t, "the cluster to join", func() bool {
		c, ok, err := store.Cluster(ctx, aclCluster)
		return err == nil && ok && c.Beat != nil
	})
	if _, err := in.client.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{aclCluster}, Manifest: app("web")}, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the projector to show the Application applied", func() bool {
		apps, err := store.Apps(ctx, projector.AppFilter{Cluster: aclCluster, Name: "web"})
		return err == nil && len(apps) == 1 && apps[0].Desired != nil && apps[0].Observed != nil &&
			apps[0].Observed.AppliedGeneration == apps[0].Desired.Generation
	})

	t.Run("live questions", func(t *testing.T) {
		// The hub writes the question and reads the answer, the spoke
		// reads the one and writes the other: the simulated cluster's
		// tree comes back.
		tree, err := in.client.Tree(t.Context(), aclCluster, "argocd", "web", 20*time.Second)
		if err != nil || !strings.Contains(string(tree.Answer), `"kind":"Deployment"`) {
			t.Errorf("tree: %v, want the simulated cluster's tree", err)
		}
		refused(t, a, n.ReaderUser, "read the answers topic", fetch(topics[events.TopicAnswers]))
		refused(t, a, n.SpokeUser(aclCluster), "read the answers topic", fetch(topics[events.TopicAnswers]))
		refused(t, a, n.SpokeUser(aclCluster), "produce to the queries topic", func(cl *kgo.Client) error {
			return cl.ProduceSync(t.Context(), &kgo.Record{Topic: topics[events.TopicQueries], Value: []byte("x")}).FirstErr()
		})
	})

	t.Run("least privilege", func(t *testing.T) {
		refused(t, a, n.SpokeUser(aclCluster), "produce to the config topic", func(cl *kgo.Client) error {
			return cl.ProduceSync(t.Context(), &kgo.Record{Topic: topics[events.TopicConfig], Value: []byte("x")}).FirstErr()
		})
		refused(t, a, n.SpokeUser(aclCluster), "commit in another cluster's group", func(cl *kgo.Client) error {
			var o kadm.Offsets
			o.Add(kadm.Offset{Topic: topics[events.TopicConfig], Partition: 0, At: 0})
			resp, err := kadm.NewClient(cl).CommitOffsets(t.Context(), n.SpokeGroup("other"), o)
			return errors.Join(err, resp.Error())
		})
		refused(t, a, n.SpokeUser(aclCluster), "read the status topic", fetch(topics[events.TopicStatus]))
		refused(t, a, n.ProjectorUser, "produce to the config topic", func(cl *kgo.Client) error {
			return cl.ProduceSync(t.Context(), &kgo.Record{Topic: topics[events.TopicConfig], Value: []byte("x")}).FirstErr()
		})
		refused(t, a, n.HubUser, "read the status topic", fetch(topics[events.TopicStatus]))
		refused(t, a, n.ReaderUser, "produce to the audit topic", func(cl *kgo.Client) error {
			return cl.ProduceSync(t.Context(), &kgo.Record{Topic: topics[events.TopicAudit], Value: []byte("x")}).FirstErr()
		})
		// The reader reads every topic.
		cl, err := kgo.NewClient(append(a.conn(n.ReaderUser), kgo.ConsumeTopics(topics[events.TopicAudit]),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		pctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if fs := cl.PollRecords(pctx, 1); fs.Err0() != nil || fs.NumRecords() == 0 {
			t.Errorf("the reader cannot read the audit topic: %v", fs.Err0())
		}
	})
}

// fetch returns a function that reads one record of topic from its start.
func fetch(topic string) func(*kgo.Client) error {
	return func(cl *kgo.Client) error {
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.PollRecords(ctx, 1).Err0()
	}
}

// refused checks that user's attempt fails with an authorization error.
func refused(t *testing.T, a *aclBroker, user, what string, try func(*kgo.Client) error) {
	t.Helper()
	cl, err := kgo.NewClient(append(a.conn(user), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = try(cl)
	var ke *kerr.Error
	if !errors.As(err, &ke) || !strings.Contains(ke.Message, "AUTHORIZATION_FAILED") {
		t.Errorf("%s may %s: %v, want an authorization error", user, what, err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
