package kafkatest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ClientName is the common name of a PKI's client certificate, and so the
// principal (User:CN=argosy-test-client) a broker sees over mTLS.
const ClientName = "argosy-test-client"

// PKI is a test certificate authority and the certificates it signed, as PEM
// files laid out like the Secrets Strimzi gives a KafkaUser of type tls
// (ca.crt, user.crt, user.key):
//   - a server certificate for 127.0.0.1 and localhost, which a broker's TLS
//     listeners present;
//   - a client certificate for mTLS, common name ClientName.
//
// Keys are ECDSA P-256 in PKCS #8; the certificates are valid for a day.
type PKI struct {
	// CAFile is the CA certificate, what a client trusts.
	CAFile string
	// ServerKeyStore holds the server's private key and certificate chain in
	// one file, as Kafka's ssl.keystore.type=PEM wants.
	ServerKeyStore string
	// ClientCertFile and ClientKeyFile are the client certificate and its key.
	ClientCertFile string
	ClientKeyFile  string
}

// NewPKI creates a CA and its certificates in dir, which must exist.
func NewPKI(dir string) (*PKI, error) {
	now := time.Now()
	caKey, caCert, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "argosy test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, now, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("test CA: %w", err)
	}
	srvKey, srvCert, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	cliKey, cliCert, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: ClientName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now, caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	p := &PKI{
		CAFile:         filepath.Join(dir, "ca.crt"),
		ServerKeyStore: filepath.Join(dir, "server.pem"),
		ClientCertFile: filepath.Join(dir, "user.crt"),
		ClientKeyFile:  filepath.Join(dir, "user.key"),
	}
	srvPEM, err := keyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	cliPEM, err := keyPEM(cliKey)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		data [][]byte
	}{
		{p.CAFile, [][]byte{certPEM(caCert)}},
		{p.ServerKeyStore, [][]byte{srvPEM, certPEM(srvCert), certPEM(caCert)}},
		{p.ClientCertFile, [][]byte{certPEM(cliCert)}},
		{p.ClientKeyFile, [][]byte{cliPEM}},
	} {
		var data []byte
		for _, d := range f.data {
			data = append(data, d...)
		}
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", filepath.Base(f.path), err)
		}
	}
	return p, nil
}

// newCert fills in tmpl's serial number and validity, and signs it with
// parentKey, or by itself when parent is nil.
func newCert(tmpl *x509.Certificate, now time.Time, parent *x509.Certificate, parentKey crypto.Signer) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new certificate: %w", err)
	}
	return key, cert, nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
