package kafkatest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

func TestNewPKI(t *testing.T) {
	p, err := NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	// Kafka reads the key store as one file: the key, then the chain.
	store, err := os.ReadFile(p.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(store), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("server.pem does not start with a PKCS #8 key:\n%.60s", store)
	}
	server, err := tls.X509KeyPair(store, store)
	if err != nil {
		t.Fatalf("server key store: %v", err)
	}
	client, err := tls.LoadX509KeyPair(p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatalf("client key pair: %v", err)
	}
	for _, tt := range []struct {
		name  string
		cert  *x509.Certificate
		opts  x509.VerifyOptions
		valid bool
	}{
		{"server for 127.0.0.1", server.Leaf, x509.VerifyOptions{DNSName: "127.0.0.1"}, true},
		{"server for localhost", server.Leaf, x509.VerifyOptions{DNSName: "localhost"}, true},
		{"server for another name", server.Leaf, x509.VerifyOptions{DNSName: "kafka.example"}, false},
		{"server is no client", server.Leaf, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, false},
		{"client", client.Leaf, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true},
		{"client is no server", client.Leaf, x509.VerifyOptions{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Roots = roots
			_, err := tt.cert.Verify(tt.opts)
			if (err == nil) != tt.valid {
				t.Errorf("Verify: %v, want valid=%v", err, tt.valid)
			}
		})
	}
	if cn := client.Leaf.Subject.CommonName; cn != ClientName {
		t.Errorf("client CN = %q, want %q", cn, ClientName)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		want string // a substring of the error, or "" for none
	}{
		{"none", nil, ""},
		{"every listener and a user", []Option{WithListeners(Plaintext, SSL, SASLSSL, SASLPlaintext), WithUser("alice", "alice-secret")}, ""},
		{"unknown listener", []Option{WithListeners("SASL_QUIC")}, `unknown listener "SASL_QUIC"`},
		{"password needing quotes", []Option{WithUser("bob", `p"w`)}, `user "bob"`},
		{"name with a comma", []Option{WithUser("a,b", "pw")}, `user "a,b"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c config
			for _, o := range tt.opts {
				o(&c)
			}
			err := c.validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
