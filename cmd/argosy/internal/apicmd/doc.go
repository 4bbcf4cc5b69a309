// Package apicmd is what the argosy commands that call /api/v1 share, the
// read commands (fleet, cluster, app, audit, report) and the hub's writes
// alike, over its one client (hub/api, which links neither the hub's
// server nor Argo CD):
//
//   - Options binds --server, --context, --token and
//     --certificate-authority, resolves which server to call with which
//     token, and makes the client; Explain makes a 401 or 403 into which
//     server refused which token and how to log in.
//   - WriteFlags binds the flags of every write (--dry-run,
//     --idempotency-key, -o), and its Session sends a write (one
//     idempotency key per invocation, the request sent again with the
//     same key after a transport error or a 503); the package also prints
//     what a write appended and the hub's objects, makes the hub's other
//     errors into messages a person can act on, reads Argo CD manifests
//     and completes the hub's objects in the shell.
//
// It lives apart from cmdkit, which the spoke's binary links too, so that
// only the argosy binary links the client and the config file.
//
// The server is the first of: --server, ARGOSY_SERVER, the server of the
// context --context (or ARGOSY_CONTEXT) names, the current context's
// server, http://127.0.0.1:8080. The token is the first of: --token,
// ARGOSY_TOKEN, the chosen context's token, none. So is the CA bundle
// trusted besides the system's CAs: --certificate-authority,
// ARGOSY_CERTIFICATE_AUTHORITY, the chosen context's, none. The current context
// applies only to its own server: with --server naming another, its token
// stays home. A context named with --context always applies.
package apicmd
