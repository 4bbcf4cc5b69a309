//go:build integration

package kafkaconn_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// The SASL user of the test brokers.
const user, password = "alice", "alice-secret"

// broker has every listener: SSL (mTLS), SASL_SSL and SASL_PLAINTEXT. Tests
// that stop a broker start their own.
var broker *kafkatest.Broker

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	started := time.Now()
	b, err := kafkatest.Start(ctx, brokerOpts(kafkatest.SSL, kafkatest.SASLSSL, kafkatest.SASLPlaintext)...)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kafkatest: cannot start Apache Kafka %s: %v\n", kafkatest.Version, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "Apache Kafka %s with TLS and SASL ready in %s\n", kafkatest.Version, time.Since(started).Round(time.Millisecond))
	broker = b
	code := m.Run()
	if err := b.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: close broker: %v\n", err)
		code = max(code, 1)
	}
	return code
}

func brokerOpts(ls ...kafkatest.Listener) []kafkatest.Option {
	return []kafkatest.Option{kafkatest.WithListeners(ls...), kafkatest.WithUser(user, password)}
}

// scram is the Strimzi way: TLS with the cluster CA, then SCRAM-SHA-512
// with the password in a file.
func scram(t *testing.T, b *kafkatest.Broker) kafkaconn.Options {
	return kafkaconn.Options{Brokers: b.ListenerAddr(kafkatest.SASLSSL), TLS: true, CAFile: b.PKI.CAFile,
		SASLMechanism: kafkaconn.MechanismSCRAMSHA512, SASLUsername: user, SASLPasswordFile: write(t, t.TempDir(), "password", password)}
}

// mtls is the other Strimzi way: TLS with the cluster CA and a client
// certificate.
func mtls(b *kafkatest.Broker) kafkaconn.Options {
	return kafkaconn.Options{Brokers: b.ListenerAddr(kafkatest.SSL), TLS: true, CAFile: b.PKI.CAFile,
		CertFile: b.PKI.ClientCertFile, KeyFile: b.PKI.ClientKeyFile}
}

// topic creates a topic for the test through the PLAINTEXT listener.
func topic(t *testing.T, b *kafkatest.Broker) string {
	t.Helper()
	name := kafkatest.Prefix(t) + "conn"
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(b.Client(t)).CreateTopic(ctx, 1, 1, nil, name); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	return name
}

// client makes a client from o and more options, closed when the test ends.
func client(t *testing.T, o kafkaconn.Options, more ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, err := o.Opts()
	if err != nil {
		t.Fatalf("Opts: %v", err)
	}
	cl, err := kgo.NewClient(append(opts, more...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func consumer(t *testing.T, o kafkaconn.Options, topic string) *kgo.Client {
	return client(t, o, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
}

// poll reads from cl until it has n records, failing the test if ctx ends
// first.
func poll(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []string {
	t.Helper()
	var got []string
	var errs []error
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %q of %d records: %v (fetch errors: %v)", got, n, ctx.Err(), errors.Join(errs...))
		}
		fs.EachError(func(_ string, _ int32, err error) { errs = append(errs, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestConnect produces and consumes through Opts over each kind of
// listener.
func TestConnect(t *testing.T) {
	b := broker
	for _, tt := range []struct {
		name string
		opts func(t *testing.T) kafkaconn.Options
	}{
		{"TLS and SCRAM-SHA-512, password file", func(t *testing.T) kafkaconn.Options { return scram(t, b) }},
		{"TLS and SCRAM-SHA-256, password from the environment", func(t *testing.T) kafkaconn.Options {
			o := scram(t, b)
			o.SASLMechanism, o.SASLPassword, o.SASLPasswordFile = kafkaconn.MechanismSCRAMSHA256, password, ""
			return o
		}},
		{"TLS and PLAIN", func(t *testing.T) kafkaconn.Options {
			o := scram(t, b)
			o.SASLMechanism = kafkaconn.MechanismPlain
			return o
		}},
		{"SCRAM-SHA-512 without TLS", func(t *testing.T) kafkaconn.Options {
			return kafkaconn.Options{Brokers: b.ListenerAddr(kafkatest.SASLPlaintext), SASLMechanism: "scram-sha-512",
				SASLUsername: user, SASLPassword: password}
		}},
		{"mTLS", func(*testing.T) kafkaconn.Options { return mtls(b) }},
		{"mTLS, server name localhost", func(*testing.T) kafkaconn.Options {
			o := mtls(b)
			o.ServerName = "localhost"
			return o
		}},
		{"TLS without verification", func(t *testing.T) kafkaconn.Options {
			o := scram(t, b)
			o.CAFile, o.InsecureSkipVerify = "", true
			return o
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			o, name := tt.opts(t), topic(t, b)
			prod := client(t, o, kgo.DefaultProduceTopic(name))
			if err := prod.ProduceSync(ctx, kgo.StringRecord(t.Name())).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if got := poll(ctx, t, consumer(t, o, name), 1); got[0] != t.Name() {
				t.Errorf("consumed %q, want %q", got, t.Name())
			}
		})
	}
}

// TestRefused shows that a refused password or certificate is reported
// with its cause by Ping, well before its context ends. (A produce would
// retry until its context ended, and report only that.)
func TestRefused(t *testing.T) {
	b := broker
	other, err := kafkatest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		base   func(t *testing.T) kafkaconn.Options
		change func(t *testing.T, o *kafkaconn.Options)
		want   func(error) bool
	}{
		{
			name: "wrong password",
			base: func(t *testing.T) kafkaconn.Options { return scram(t, b) },
			change: func(t *testing.T, o *kafkaconn.Options) {
				o.SASLPasswordFile = write(t, t.TempDir(), "password", "wrong")
			},
			want: func(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) },
		},
		{
			name:   "unknown user",
			base:   func(t *testing.T) kafkaconn.Options { return scram(t, b) },
			change: func(_ *testing.T, o *kafkaconn.Options) { o.SASLUsername = "mallory" },
			want:   func(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) },
		},
		{
			name:   "untrusted CA",
			base:   func(t *testing.T) kafkaconn.Options { return scram(t, b) },
			change: func(_ *testing.T, o *kafkaconn.Options) { o.CAFile = other.CAFile },
			want:   func(err error) bool { return errors.As(err, new(x509.UnknownAuthorityError)) },
		},
		{
			name:   "server name not in the certificate",
			base:   func(*testing.T) kafkaconn.Options { return mtls(b) },
			change: func(_ *testing.T, o *kafkaconn.Options) { o.ServerName = "kafka.example" },
			want:   func(err error) bool { return errors.As(err, new(x509.HostnameError)) },
		},
		{
			name:   "no client certificate",
			base:   func(*testing.T) kafkaconn.Options { return mtls(b) },
			change: func(_ *testing.T, o *kafkaconn.Options) { o.CertFile, o.KeyFile = "", "" },
			want:   func(err error) bool { return err != nil && strings.Contains(err.Error(), "remote error: tls: ") },
		},
		{
			name: "client certificate of another CA",
			base: func(*testing.T) kafkaconn.Options { return mtls(b) },
			change: func(_ *testing.T, o *kafkaconn.Options) {
				o.CertFile, o.KeyFile = other.ClientCertFile, other.ClientKeyFile
			},
			want: func(err error) bool { return err != nil && strings.Contains(err.Error(), "remote error: tls: ") },
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.base(t)
			tt.change(t, &o)
			const limit = 20 * time.Second
			ctx, cancel := context.WithTimeout(t.Context(), limit)
			defer cancel()
			start := time.Now()
			err := client(t, o).Ping(ctx)
			took := time.Since(start)
			if !tt.want(err) || ctx.Err() != nil {
				t.Fatalf("Ping = %v after %s, want the cause", err, took.Round(time.Millisecond))
			}
			t.Logf("Ping failed in %s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestRotatedPassword shows that a client picks up a password file's new
// content on its next connection.
func TestRotatedPassword(t *testing.T) {
	o := scram(t, broker)
	if err := os.WriteFile(o.SASLPasswordFile, []byte("old-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := client(t, o)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("Ping with the old password = %v, want %v", err, kerr.SaslAuthenticationFailed)
	}
	if err := os.WriteFile(o.SASLPasswordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("Ping with the new password: %v", err)
	}
}

// TestCatchUpAfterOutage stops the broker under a producer and a consumer
// that connect over TLS and SCRAM-SHA-512. A record produced during the
// outage waits in the client and is delivered after the restart, and the
// consumer reads on from where it was.
func TestCatchUpAfterOutage(t *testing.T) {
	b := kafkatest.StartBroker(t, brokerOpts(kafkatest.SASLSSL)...)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	name := topic(t, b)
	o := scram(t, b)
	prod := client(t, o, kgo.DefaultProduceTopic(name))
	cons := consumer(t, o, name)
	if err := prod.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatalf("produce before the outage: %v", err)
	}
	if got := poll(ctx, t, cons, 1); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("consumed %q before the outage", got)
	}

	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	delivered := make(chan error, 1)
	prod.Produce(ctx, kgo.StringRecord("during"), func(_ *kgo.Record, err error) { delivered <- err })
	wait, cancelWait := context.WithTimeout(ctx, 2*time.Second)
	fs := cons.PollFetches(wait)
	cancelWait()
	if n := fs.NumRecords(); n > 0 {
		t.Fatalf("consumed %d records while the broker was down", n)
	}
	select {
	case err := <-delivered:
		t.Fatalf("the record produced during the outage was settled before the restart: %v", err)
	default:
	}

	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("broker down for %s", back.Sub(down).Round(time.Millisecond))
	select {
	case err := <-delivered:
		if err != nil {
			t.Fatalf("the record produced during the outage: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the record produced during the outage was not delivered after the restart: %v", ctx.Err())
	}
	if err := prod.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce after the restart: %v", err)
	}
	if got := poll(ctx, t, cons, 2); !slices.Equal(got, []string{"during", "after"}) {
		t.Fatalf("consumed %q after the restart, want [during after]", got)
	}
	t.Logf("producer and consumer caught up %s after the broker was back", time.Since(back).Round(time.Millisecond))
}
