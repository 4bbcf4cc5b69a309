// Command gen writes the golden wire samples that do not exist yet. It never
// overwrites a sample: once committed, a sample must decode forever. Add a
// payload below when a new event type or version joins the catalogue.
//
//	go run ./events/internal/golden/gen -dir events/testdata/golden
package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/events/internal/golden"
	"github.com/argosyproj/argosy/schemas"
)

var at = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func main() {
	dir := flag.String("dir", "events/testdata/golden", "directory of the golden samples")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	hub, err := events.NewSigner(golden.HubKey)
	if err != nil {
		return err
	}
	cl, err := events.NewSigner(golden.ClusterKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, "keys.json"), golden.KeyFile{Keys: []golden.KeyEntry{
		{ID: hub.KeyID(), Owner: golden.HubName, Role: schemas.RoleHub, PublicKey: hub.Public()},
		{ID: cl.KeyID(), Owner: golden.ClusterName, Role: schemas.RoleCluster, PublicKey: cl.Public()},
	}}); err != nil {
		return err
	}
	// The first samples are in the DSSE form with a dataschema on every
	// event, as every writer wrote them before the compact form; those in
	// golden.CompactDir are in the compact form, as writers write today.
	if err := writeForm(dir, events.SigDSSE, hub, cl); err != nil {
		return err
	}
	return writeForm(filepath.Join(dir, golden.CompactDir), events.SigCompact, hub, cl)
}

// writeForm writes the samples of every type signed in form into dir.
func writeForm(dir string, form events.SigForm, hub, cl *events.Signer) error {
	if err := os.MkdirAll(filepath.Join(dir, "structured"), 0o755); err != nil {
		return err
	}
	topics := events.DefaultTopics("")
	for i, s := range samples(cl.Public()) {
		sp, ok := events.Lookup(s.typ)
		if !ok {
			return fmt.Errorf("sample of unknown type %s", s.typ)
		}
		signer := hub
		if sp.Signer == schemas.RoleCluster {
			signer = cl
		}
		e, err := sampleEvent(i, sp, s, form)
		if err != nil {
			return err
		}
		if err := signer.SignAs(context.Background(), e, form); err != nil {
			return err
		}
		r, err := events.EventRecord(context.Background(), e)
		if err != nil {
			return err
		}
		r.Topic, r.Partition, r.Offset, r.Timestamp = topics[sp.Topic], 0, int64(i), golden.SampleLogTime
		if err := writeNew(filepath.Join(dir, s.typ+".json"), golden.FromRecord(r)); err != nil {
			return err
		}
		if s.typ == events.TypeHeartbeat {
			st, err := structured(e, r)
			if err != nil {
				return err
			}
			if err := writeNew(filepath.Join(dir, "structured", s.typ+".json"), st); err != nil {
				return err
			}
		}
	}
	return nil
}

// sampleEvent returns the i-th sample's unsigned event. In the DSSE form
// it carries a dataschema whatever its type.
func sampleEvent(i int, sp events.Spec, s sample, form events.SigForm) (*event.Event, error) {
	// Placements are keyed "namespace/name"; everything else by the
	// golden cluster.
	key, placement := strings.CutPrefix(s.subject, "placements/")
	if !placement {
		key = golden.ClusterName
	}
	e, err := events.New("//argosy.dev/"+string(sp.Family)+"/golden", s.typ, s.subject, key, s.data)
	if err != nil {
		return nil, err
	}
	e.SetID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
	e.SetTime(at)
	e.SetExtension("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if form == events.SigDSSE {
		e.SetDataSchema(sp.SchemaURL())
	}
	return e, nil
}

// structured returns r's event in structured content mode.
func structured(e *event.Event, r *kgo.Record) (golden.Sample, error) {
	b, err := format.JSON.Marshal(e)
	if err != nil {
		return golden.Sample{}, err
	}
	s := golden.FromRecord(&kgo.Record{Topic: r.Topic, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: b})
	s.Headers = []golden.Header{{Key: "content-type", Value: event.ApplicationCloudEventsJSON}}
	return s, nil
}

func writeNew(path string, v any) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type sample struct {
	typ     string
	subject string
	data    any
}

func app(kind string) events.Subject {
	return events.Subject{Cluster: golden.ClusterName, Kind: kind, Namespace: "argocd", Name: "guestbook"}
}

func res(gen int64) schemas.Resource {
	return schemas.Resource{Cluster: golden.ClusterName, Namespace: "argocd", Name: "guestbook", Generation: gen}
}

func samples(clusterPub []byte) []sample {
	spec := json.RawMessage(`{"project":"default","source":{"repoURL":"https://git.example.com/guestbook.git","path":"guestbook","targetRevision":"HEAD"},"destination":{"server":"https://kubernetes.default.svc","namespace":"guestbook"},"syncPolicy":{"automated":{"prune":true,"selfHeal":true}}}`)
	cluster := events.Subject{Cluster: golden.ClusterName}.String()
	pin := int32(3)
	finished := at.Add(-time.Minute)
	sealPub := [32]byte{1, 2, 3}
	return []sample{
		{events.TypeApplicationUpserted, app(schemas.SubjectApplications).String(), schemas.ApplicationUpserted{Resource: res(7), Project: "default",
			Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"argosy.dev/owner": "web-team"}, Spec: spec}},
		{events.TypeApplicationDeleted, app(schemas.SubjectApplications).String(), schemas.ApplicationDeleted{Resource: res(8), Cascade: true}},
		{events.TypeAppProjectUpserted, app(schemas.SubjectAppProjects).String(), schemas.AppProjectUpserted{Resource: res(2),
			Spec: json.RawMessage(`{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}]}`)}},
		{events.TypeAppProjectDeleted, app(schemas.SubjectAppProjects).String(), schemas.AppProjectDeleted{Resource: res(3)}},
		{events.TypeRepositoryUpserted, app(schemas.SubjectRepositories).String(), schemas.RepositoryUpserted{Resource: res(1),
			URL: "https://git.example.com/guestbook.git", Type: "git", Project: "default",
			Credentials: &schemas.Sealed{KeyID: events.KeyID(sealPub[:]), Ciphertext: base64.StdEncoding.EncodeToString([]byte("sealed-box-bytes"))}}},
		{events.TypeRepositoryDeleted, app(schemas.SubjectRepositories).String(), schemas.RepositoryDeleted{Resource: res(2), URL: "https://git.example.com/guestbook.git"}},
		{events.TypeClusterRegistered, cluster, schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: golden.ClusterName, Name: golden.ClusterName, Generation: 1},
			Labels: map[string]string{"env": "prod", "region": "eu-west-1"}, Partition: &pin,
			SigningKeyID: events.KeyID(clusterPub), SealingKeyID: events.KeyID(sealPub[:])}},
		{events.TypeClusterDeregistered, cluster, schemas.ClusterDeregistered{Resource: schemas.Resource{Cluster: golden.ClusterName, Name: golden.ClusterName, Generation: 2}, Reason: "decommissioned"}},
		{events.TypeOperationRequested, app(schemas.SubjectApplications).String(), schemas.OperationRequested{Resource: res(7), RequestID: "req-1",
			Operation: schemas.OperationSync, RequestedBy: "alice@example.com", Revision: "v1.2.3", Prune: true}},
		{events.TypeHeartbeat, cluster, schemas.Heartbeat{Cluster: golden.ClusterName, AgentVersion: "0.1.0", ArgoCDVersion: "v2.14.21",
			Mode: schemas.ModeManaged, ConfigOffset: 42, Applications: 12, Seq: 99}},
		{events.TypeApplicationStatus, app(schemas.SubjectApplications).String(), schemas.ApplicationStatusChanged{Resource: res(7), Seq: 5, Full: true,
			Sync:      &schemas.SyncStatus{Status: "Synced", Revision: "a1b2c3d"},
			Health:    &schemas.HealthStatus{Status: "Healthy"},
			Operation: &schemas.OperationState{Phase: "Succeeded", Message: "successfully synced", StartedAt: finished.Add(-time.Minute), FinishedAt: &finished}}},
		{events.TypeApplicationStatusBatch, cluster, schemas.ApplicationStatusBatch{Cluster: golden.ClusterName, Deltas: []schemas.ApplicationStatusChanged{
			{Resource: res(7), Seq: 6, Health: &schemas.HealthStatus{Status: "Progressing"}},
			{Resource: schemas.Resource{Cluster: golden.ClusterName, Namespace: "argocd", Name: "billing", Generation: 3}, Seq: 2,
				Sync: &schemas.SyncStatus{Status: "OutOfSync", Revision: "b2c3d4e"}}}}},
		{events.TypeConfigApplied, app(schemas.SubjectApplications).String(), schemas.ConfigApplied{Resource: res(7), EventID: "00000000-0000-4000-8000-000000000001", Offset: 41}},
		{events.TypeConfigRejected, app(schemas.SubjectApplications).String(), schemas.ConfigRejected{Resource: res(6), EventID: "00000000-0000-4000-8000-000000000001",
			Offset: 40, Code: schemas.RejectStale, Reason: "generation 6 is not newer than applied generation 7"}},
		{events.TypeOperationCompleted, app(schemas.SubjectApplications).String(), schemas.OperationCompleted{Resource: res(7),
			EventID: "00000000-0000-4000-8000-000000000009", Offset: 43, RequestID: "req-1", Operation: schemas.OperationSync,
			Phase: schemas.OperationPhaseSucceeded, Message: "successfully synced (all tasks run)", Revision: "a1b2c3d",
			StartedAt: ptr(finished.Add(-time.Minute)), FinishedAt: &finished}},
		{events.TypeDeploymentRecorded, app(schemas.SubjectApplications).String(), schemas.DeploymentRecorded{Resource: res(7), DeploymentID: "guestbook-12",
			Revision: "a1b2c3d", PreviousRevision: "9f8e7d6", Phase: "Succeeded", Initiator: "automated",
			StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Images: []string{"registry.example.com/guestbook:v1.2.3"}}},
		{events.TypeDeploymentGap, app(schemas.SubjectApplications).String(), schemas.DeploymentGap{Resource: res(7), AppUID: "00000000-0000-4000-8000-00000000000a",
			Reason: schemas.GapHistoryTrimmed, FromHistoryID: 3, ToHistoryID: ptr(int64(5)), LastRecorded: ptr(int64(2)),
			Detail: "history ids 3 to 5 left Argo CD's history before they were recorded"}},
		{events.TypeAuditRecorded, cluster, schemas.AuditRecorded{RequestID: "req-1", Actor: "alice@example.com", Action: "applications.sync",
			Method: "POST", Path: "/api/v1/clusters/golden-cluster/applications/argocd/guestbook/sync", Cluster: golden.ClusterName,
			Target: "argocd/guestbook", Outcome: "allowed", StatusCode: 202, RemoteAddr: "127.0.0.1:50000", EventIDs: []string{"00000000-0000-4000-8000-000000000009"}}},
		{events.TypeKeyRegistered, "keys/" + events.KeyID(clusterPub), keyReg(clusterPub)},
		{events.TypeKeyRotated, "keys/" + events.KeyID(clusterPub), schemas.KeyRotated{KeyID: events.KeyID(clusterPub), Next: keyReg(golden.NextClusterKey.Public().(ed25519.PublicKey))}},
		{events.TypeKeyRevoked, "keys/" + events.KeyID(clusterPub), schemas.KeyRevoked{KeyID: events.KeyID(clusterPub), Reason: "node compromised"}},
		{events.TypeApplicationPublished, app(schemas.SubjectApplications).String(), schemas.ApplicationPublished{Resource: res(1), Project: "default", Spec: spec}},
		{events.TypeDriftReverted, app(schemas.SubjectApplications).String(), schemas.DriftReverted{Resource: res(7), Kind: "Application",
			Fields: []string{"spec.source.targetRevision"}, ConfigOffset: 41}},
		{events.TypeResyncRequested, cluster, schemas.ResyncRequested{Cluster: golden.ClusterName, Reason: schemas.ResyncDataLoss, LastOffset: 41, FirstAvailable: 100}},
		{events.TypeQueryRequested, app(schemas.SubjectApplications).String(), schemas.QueryRequested{Resource: res(0), RequestID: "q-1",
			Query: schemas.QueryLogs, RequestedBy: "alice@example.com", Target: &schemas.ResourceRef{Version: "v1", Kind: "Pod", Namespace: "guestbook", Name: "guestbook-5d8f7-x2v9q"},
			Container: "web", TailLines: 100, ExpiresAt: finished.Add(30 * time.Second)}},
		{events.TypeQueryAnswered, app(schemas.SubjectApplications).String(), schemas.QueryAnswered{Resource: res(0), RequestID: "q-1",
			Query: schemas.QueryLogs, Answer: json.RawMessage(`{"lines":["listening on :8080"]}`)}},
		{typ: events.TypePlacementUpserted, subject: "placements/argocd/guestbook", data: schemas.PlacementUpserted{Namespace: "argocd", Name: "guestbook", Generation: 2,
			Selector: "env=prod,region in (eu-west-1)", Prune: schemas.PruneDelete, Project: "default", Labels: map[string]string{"team": "web"}, Spec: spec}},
		{typ: events.TypePlacementDeleted, subject: "placements/argocd/guestbook", data: schemas.PlacementDeleted{Namespace: "argocd", Name: "guestbook", Generation: 3,
			Prune: schemas.PruneOrphan}},
	}
}

func keyReg(pub []byte) schemas.KeyRegistered {
	return schemas.KeyRegistered{KeyID: events.KeyID(pub), Owner: golden.ClusterName, Role: schemas.RoleCluster,
		Purpose: schemas.PurposeSigning, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub)}
}

func ptr[T any](v T) *T { return &v }
