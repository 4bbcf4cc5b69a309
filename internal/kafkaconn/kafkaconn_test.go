package kafkaconn_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// bind binds fresh options to a new flag set and parses args.
func bind(t *testing.T, prefix string, args ...string) (*kafkaconn.Options, *pflag.FlagSet) {
	t.Helper()
	var o kafkaconn.Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs, prefix)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return &o, fs
}

func TestBindFlags(t *testing.T) {
	for _, tt := range []struct {
		name   string
		prefix string
		env    map[string]string
		args   []string
		want   kafkaconn.Options
	}{
		{name: "defaults", prefix: "ARGOSY_", want: kafkaconn.Options{SASLMechanism: "none"}},
		{
			name:   "flags",
			prefix: "ARGOSY_",
			args: []string{"--kafka-brokers=a:9093,b:9093", "--kafka-tls", "--kafka-ca-file=/ca.crt",
				"--kafka-cert-file=/user.crt", "--kafka-key-file=/user.key", "--kafka-tls-server-name=kafka.example",
				"--kafka-tls-insecure-skip-verify", "--kafka-sasl-mechanism=SCRAM-SHA-512",
				"--kafka-sasl-username=alice", "--kafka-sasl-password-file=/password", "--kafka-rack=eu-west-1a"},
			want: kafkaconn.Options{Brokers: "a:9093,b:9093", TLS: true, CAFile: "/ca.crt", CertFile: "/user.crt",
				KeyFile: "/user.key", ServerName: "kafka.example", InsecureSkipVerify: true,
				SASLMechanism: "SCRAM-SHA-512", SASLUsername: "alice", SASLPasswordFile: "/password", Rack: "eu-west-1a"},
		},
		{
			name:   "environment",
			prefix: "ARGOSY_",
			env: map[string]string{"ARGOSY_KAFKA_BROKERS": "a:9093", "ARGOSY_KAFKA_TLS": "true",
				"ARGOSY_KAFKA_CA_FILE": "/ca.crt", "ARGOSY_KAFKA_CERT_FILE": "/user.crt", "ARGOSY_KAFKA_KEY_FILE": "/user.key",
				"ARGOSY_KAFKA_TLS_SERVER_NAME": "kafka.example", "ARGOSY_KAFKA_TLS_INSECURE_SKIP_VERIFY": "1",
				"ARGOSY_KAFKA_SASL_MECHANISM": "PLAIN", "ARGOSY_KAFKA_SASL_USERNAME": "alice",
				"ARGOSY_KAFKA_SASL_PASSWORD": "s3cret", "ARGOSY_KAFKA_SASL_PASSWORD_FILE": "/password", "ARGOSY_KAFKA_RACK": "zone-b"},
			want: kafkaconn.Options{Brokers: "a:9093", TLS: true, CAFile: "/ca.crt", CertFile: "/user.crt",
				KeyFile: "/user.key", ServerName: "kafka.example", InsecureSkipVerify: true, SASLMechanism: "PLAIN",
				SASLUsername: "alice", SASLPassword: "s3cret", SASLPasswordFile: "/password", Rack: "zone-b"},
		},
		{
			name:   "flags override the environment",
			prefix: "ARGOSY_",
			env:    map[string]string{"ARGOSY_KAFKA_BROKERS": "env:9092", "ARGOSY_KAFKA_TLS": "true"},
			args:   []string{"--kafka-brokers=flag:9092", "--kafka-tls=false"},
			want:   kafkaconn.Options{Brokers: "flag:9092", SASLMechanism: "none"},
		},
		{
			name:   "another prefix",
			prefix: "HUB_",
			env:    map[string]string{"HUB_KAFKA_BROKERS": "hub:9092", "ARGOSY_KAFKA_BROKERS": "spoke:9092", "HUB_KAFKA_SASL_PASSWORD": "pw"},
			want:   kafkaconn.Options{Brokers: "hub:9092", SASLMechanism: "none", SASLPassword: "pw"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got, _ := bind(t, tt.prefix, tt.args...)
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(kafkaconn.Options{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBindFlagsHelp checks that every flag names its variable, and that the
// password has no flag, which process lists would show.
func TestBindFlagsHelp(t *testing.T) {
	_, fs := bind(t, "ARGOSY_")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		names = append(names, f.Name)
		env := "ARGOSY_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if !strings.Contains(f.Usage, "(env "+env+")") {
			t.Errorf("--%s: help %q does not name %s", f.Name, f.Usage, env)
		}
	})
	want := []string{"kafka-brokers", "kafka-ca-file", "kafka-cert-file", "kafka-key-file", "kafka-rack", "kafka-sasl-mechanism",
		"kafka-sasl-password-file", "kafka-sasl-username", "kafka-tls", "kafka-tls-insecure-skip-verify", "kafka-tls-server-name"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	if f := fs.Lookup("kafka-sasl-password-file"); !strings.Contains(f.Usage, "ARGOSY_KAFKA_SASL_PASSWORD") {
		t.Errorf("--kafka-sasl-password-file: help %q does not name ARGOSY_KAFKA_SASL_PASSWORD", f.Usage)
	}
}

func TestBindFlagsValidateNamesVariables(t *testing.T) {
	t.Setenv("ARGOSY_KAFKA_TLS", "yes please")
	t.Setenv("ARGOSY_KAFKA_TLS_INSECURE_SKIP_VERIFY", "maybe")
	o, _ := bind(t, "ARGOSY_", "--kafka-brokers=a:9092", "--kafka-sasl-mechanism=PLAIN", "--kafka-sasl-username=alice")
	err := o.Validate()
	for _, want := range []string{`ARGOSY_KAFKA_TLS: "yes please" is not a boolean`, `ARGOSY_KAFKA_TLS_INSECURE_SKIP_VERIFY: "maybe" is not a boolean`,
		"needs a password: --kafka-sasl-password-file or ARGOSY_KAFKA_SASL_PASSWORD"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %s", err, want)
		}
	}
}

// files are a PKI and other files for the options to point at.
type files struct {
	*kafkatest.PKI
	password, emptyPassword, missing, notPEM string
	otherKey                                 string // a key that does not match ClientCertFile
}

func newFiles(t *testing.T) files {
	t.Helper()
	dir := t.TempDir()
	p, err := kafkatest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := kafkatest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := files{PKI: p, password: write(t, dir, "password", "s3cret\n"), emptyPassword: write(t, dir, "empty", "\n"),
		missing: filepath.Join(dir, "missing"), notPEM: write(t, dir, "not.pem", "hello"), otherKey: other.ClientKeyFile}
	return f
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidate(t *testing.T) {
	f := newFiles(t)
	for _, tt := range []struct {
		name string
		opts kafkaconn.Options
		want []string // a substring of each error, in order
	}{
		{name: "plaintext", opts: kafkaconn.Options{Brokers: "a:9092, b:9092"}},
		{name: "mTLS", opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, CAFile: f.CAFile, CertFile: f.ClientCertFile, KeyFile: f.ClientKeyFile}},
		{name: "TLS with system roots", opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, ServerName: "kafka.example"}},
		{name: "SCRAM with a password file", opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, SASLMechanism: "scram-sha-512", SASLUsername: "alice", SASLPasswordFile: f.password}},
		{name: "PLAIN with a password", opts: kafkaconn.Options{Brokers: "a:9093", SASLMechanism: "PLAIN", SASLUsername: "alice", SASLPassword: "pw"}},
		{name: "mechanism none", opts: kafkaconn.Options{Brokers: "a:9093", SASLMechanism: "None"}},
		{name: "no brokers", opts: kafkaconn.Options{Brokers: " "}, want: []string{"--kafka-brokers is required"}},
		{name: "empty broker", opts: kafkaconn.Options{Brokers: "a:9092,,b:9092"}, want: []string{`--kafka-brokers "a:9092,,b:9092" has an empty entry`}},
		{
			name: "TLS files without TLS",
			opts: kafkaconn.Options{Brokers: "a:9092", CAFile: f.CAFile, CertFile: f.ClientCertFile, KeyFile: f.ClientKeyFile, ServerName: "x"},
			want: []string{"--kafka-ca-file needs --kafka-tls", "--kafka-cert-file needs --kafka-tls", "--kafka-key-file needs --kafka-tls", "--kafka-tls-server-name needs --kafka-tls"},
		},
		{name: "skip verify without TLS", opts: kafkaconn.Options{Brokers: "a:9092", InsecureSkipVerify: true}, want: []string{"--kafka-tls-insecure-skip-verify needs --kafka-tls"}},
		{
			name: "skip verify and a CA",
			opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, InsecureSkipVerify: true, CAFile: f.CAFile},
			want: []string{"--kafka-tls-insecure-skip-verify skips the check --kafka-ca-file is for"},
		},
		{name: "cert without key", opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, CertFile: f.ClientCertFile}, want: []string{"--kafka-cert-file needs --kafka-key-file"}},
		{name: "key without cert", opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, KeyFile: f.ClientKeyFile}, want: []string{"--kafka-key-file needs --kafka-cert-file"}},
		{name: "missing CA file", opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, CAFile: f.missing}, want: []string{"--kafka-ca-file: open "}},
		{name: "CA file without certificates", opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, CAFile: f.notPEM}, want: []string{"no PEM certificate in it"}},
		{
			name: "key of another certificate",
			opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, CertFile: f.ClientCertFile, KeyFile: f.otherKey},
			want: []string{"--kafka-cert-file and --kafka-key-file: tls: private key does not match public key"},
		},
		{name: "missing key file", opts: kafkaconn.Options{Brokers: "a:9092", TLS: true, CertFile: f.ClientCertFile, KeyFile: f.missing}, want: []string{"--kafka-cert-file and --kafka-key-file: open "}},
		{name: "unknown mechanism", opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "GSSAPI", SASLUsername: "alice"}, want: []string{`--kafka-sasl-mechanism "GSSAPI" is not one of`}},
		{name: "user without mechanism", opts: kafkaconn.Options{Brokers: "a:9092", SASLUsername: "alice"}, want: []string{"needs --kafka-sasl-mechanism"}},
		{name: "password without mechanism", opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "none", SASLPassword: "pw"}, want: []string{"needs --kafka-sasl-mechanism"}},
		{
			name: "mechanism without user or password",
			opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "SCRAM-SHA-256"},
			want: []string{"--kafka-sasl-mechanism needs --kafka-sasl-username", "--kafka-sasl-mechanism needs a password"},
		},
		{
			name: "two passwords",
			opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "PLAIN", SASLUsername: "alice", SASLPassword: "pw", SASLPasswordFile: f.password},
			want: []string{"set both by the environment and by --kafka-sasl-password-file"},
		},
		{name: "missing password file", opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "PLAIN", SASLUsername: "alice", SASLPasswordFile: f.missing}, want: []string{"--kafka-sasl-password-file: open "}},
		{name: "empty password file", opts: kafkaconn.Options{Brokers: "a:9092", SASLMechanism: "PLAIN", SASLUsername: "alice", SASLPasswordFile: f.emptyPassword}, want: []string{"is empty"}},
		{
			name: "everything at once",
			opts: kafkaconn.Options{CertFile: f.ClientCertFile, SASLMechanism: "OAUTHBEARER"},
			want: []string{"--kafka-brokers is required", "--kafka-cert-file needs --kafka-tls", "--kafka-cert-file needs --kafka-key-file", "--kafka-sasl-mechanism"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var got []error
			if joined, ok := err.(interface{ Unwrap() []error }); ok {
				got = joined.Unwrap()
			} else if err != nil {
				got = []error{err}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate() = %v\nwant %d errors: %q", err, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i], want)
				}
			}
			if _, optsErr := tt.opts.Opts(); (optsErr == nil) != (err == nil) {
				t.Errorf("Opts() error %v, Validate() error %v: want both or neither", optsErr, err)
			}
		})
	}
}

// applied is what a client made from Opts holds.
type applied struct {
	Seeds              []string
	TLS                bool
	MinVersion         uint16
	ServerName         string
	InsecureSkipVerify bool
	Roots              bool
	ClientCert         bool
	Mechanism          string
	FirstMessage       string // up to the SCRAM nonce
	Rack               string
}

func apply(t *testing.T, o *kafkaconn.Options) applied {
	t.Helper()
	opts, err := o.Opts()
	if err != nil {
		t.Fatalf("Opts: %v", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer cl.Close()
	a := applied{Seeds: cl.OptValue(kgo.SeedBrokers).([]string), Rack: cl.OptValue(kgo.Rack).(string)}
	if cfg, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); cfg != nil {
		a.TLS, a.MinVersion, a.ServerName, a.InsecureSkipVerify = true, cfg.MinVersion, cfg.ServerName, cfg.InsecureSkipVerify
		a.Roots = cfg.RootCAs != nil
		if cfg.GetClientCertificate != nil {
			c, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
			if err != nil {
				t.Fatalf("GetClientCertificate: %v", err)
			}
			a.ClientCert = c.Leaf != nil && c.Leaf.Subject.CommonName == kafkatest.ClientName
		}
	}
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) > 0 {
		a.Mechanism, a.FirstMessage = ms[0].Name(), firstMessage(t, ms[0])
	}
	return a
}

// firstMessage is what the mechanism sends first, up to SCRAM's random nonce.
func firstMessage(t *testing.T, m sasl.Mechanism) string {
	t.Helper()
	_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9093")
	if err != nil {
		t.Fatalf("%s: Authenticate: %v", m.Name(), err)
	}
	s, _, _ := strings.Cut(string(msg), ",r=")
	return s
}

func TestOpts(t *testing.T) {
	f := newFiles(t)
	for _, tt := range []struct {
		name string
		opts kafkaconn.Options
		want applied
	}{
		{name: "plaintext", opts: kafkaconn.Options{Brokers: " a:9092 ,b:9092"}, want: applied{Seeds: []string{"a:9092", "b:9092"}}},
		{name: "a rack", opts: kafkaconn.Options{Brokers: "a:9092", Rack: "eu-west-1a"}, want: applied{Seeds: []string{"a:9092"}, Rack: "eu-west-1a"}},
		{
			name: "TLS and SCRAM-SHA-512 with a password file",
			opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, CAFile: f.CAFile, SASLMechanism: "scram-sha-512", SASLUsername: "alice", SASLPasswordFile: f.password},
			want: applied{Seeds: []string{"a:9093"}, TLS: true, MinVersion: tls.VersionTLS12, Roots: true, Mechanism: "SCRAM-SHA-512", FirstMessage: "n,,n=alice"},
		},
		{
			name: "mTLS with a server name",
			opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, CAFile: f.CAFile, CertFile: f.ClientCertFile, KeyFile: f.ClientKeyFile, ServerName: "kafka.example"},
			want: applied{Seeds: []string{"a:9093"}, TLS: true, MinVersion: tls.VersionTLS12, ServerName: "kafka.example", Roots: true, ClientCert: true},
		},
		{
			name: "skip verification",
			opts: kafkaconn.Options{Brokers: "a:9093", TLS: true, InsecureSkipVerify: true},
			want: applied{Seeds: []string{"a:9093"}, TLS: true, MinVersion: tls.VersionTLS12, InsecureSkipVerify: true},
		},
		{
			name: "SCRAM-SHA-256",
			opts: kafkaconn.Options{Brokers: "a:9093", SASLMechanism: "SCRAM-SHA-256", SASLUsername: "bob", SASLPassword: "pw"},
			want: applied{Seeds: []string{"a:9093"}, Mechanism: "SCRAM-SHA-256", FirstMessage: "n,,n=bob"},
		},
		{
			name: "PLAIN with a password file",
			opts: kafkaconn.Options{Brokers: "a:9093", SASLMechanism: "plain", SASLUsername: "alice", SASLPasswordFile: f.password},
			want: applied{Seeds: []string{"a:9093"}, Mechanism: "PLAIN", FirstMessage: "\x00alice\x00s3cret"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, apply(t, &tt.opts)); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOptsRereadsSecrets checks that renewed certificates and a rotated
// password reach a client without making a new one, and that changing the
// options after Opts does not.
func TestOptsRereadsSecrets(t *testing.T) {
	f := newFiles(t)
	dir := t.TempDir()
	pass := write(t, dir, "password", "old")
	o := kafkaconn.Options{Brokers: "a:9093", TLS: true, CAFile: f.CAFile, CertFile: f.ClientCertFile, KeyFile: f.ClientKeyFile,
		SASLMechanism: "PLAIN", SASLUsername: "alice", SASLPasswordFile: pass}
	opts, err := o.Opts()
	if err != nil {
		t.Fatal(err)
	}
	o.SASLUsername, o.SASLPasswordFile, o.CertFile = "mallory", f.missing, f.missing
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m := cl.OptValue(kgo.SASL).([]sasl.Mechanism)[0]
	getCert := cl.OptValue(kgo.DialTLSConfig).(*tls.Config).GetClientCertificate
	before, err := getCert(&tls.CertificateRequestInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if got := firstMessage(t, m); got != "\x00alice\x00old" {
		t.Errorf("first PLAIN message %q, want the old password", got)
	}

	write(t, dir, "password", "new\r\n")
	renewed, err := kafkatest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{renewed.ClientCertFile, f.ClientCertFile}, {renewed.ClientKeyFile, f.ClientKeyFile}} {
		if err := os.Rename(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got := firstMessage(t, m); got != "\x00alice\x00new" {
		t.Errorf("first PLAIN message %q, want the new password", got)
	}
	after, err := getCert(&tls.CertificateRequestInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(before.Leaf.Raw, after.Leaf.Raw) {
		t.Error("the client certificate was not read again")
	}

	if err := os.Remove(pass); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Authenticate(context.Background(), "127.0.0.1:9093"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Authenticate without the password file: %v, want %v", err, os.ErrNotExist)
	}
}
