package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/store"
)

// Errors about the home directory.
var (
	// ErrHomeExists: init refuses to overwrite an existing home.
	ErrHomeExists = errors.New("home already initialised")
	// ErrNoHome: the home has not been initialised.
	ErrNoHome = errors.New("home not initialised")
	// ErrInsecureFile: a secret file is readable by group or others.
	ErrInsecureFile = errors.New("secret file is readable by others")
)

// noHomeError is ErrNoHome for one home, saying what to do.
type noHomeError struct{ home string }

func (e *noHomeError) Error() string {
	return fmt.Sprintf("%s is not a node home yet (no config.toml): create it with idlegrid init --home %s --role provider, renter or bootstrap", e.home, e.home)
}

func (e *noHomeError) Unwrap() error { return ErrNoHome }

// homeExistsError is ErrHomeExists for one home.
type homeExistsError struct{ home string }

func (e *homeExistsError) Error() string {
	return fmt.Sprintf("%s is already a node home (init --force rewrites its config and API token, and keeps its identity and store)", e.home)
}

func (e *homeExistsError) Unwrap() error { return ErrHomeExists }

// Files in a node's home directory.
const (
	configFile   = "config.toml"
	identityFile = "identity.key"
	tokenFile    = "api.token"
	apiURLFile   = "api.url"
	storeDir     = "store"
)

// DefaultHome is $IDLEGRID_HOME, else ~/.idlegrid.
func DefaultHome() (string, error) {
	if h := os.Getenv("IDLEGRID_HOME"); h != "" {
		return h, nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate home directory (set IDLEGRID_HOME or --home): %w", err)
	}
	return filepath.Join(dir, ".idlegrid"), nil
}

// ConfigPath is home/config.toml.
func ConfigPath(home string) string { return filepath.Join(home, configFile) }

// StorePath is home/store.
func StorePath(home string) string { return filepath.Join(home, storeDir) }

// APIURLPath holds the URL of the running daemon's API; written on start,
// removed on clean shutdown.
func APIURLPath(home string) string { return filepath.Join(home, apiURLFile) }

// IdentityPath is home/identity.key, the node's private key.
func IdentityPath(home string) string { return filepath.Join(home, identityFile) }

// TokenPath is home/api.token.
func TokenPath(home string) string { return filepath.Join(home, tokenFile) }

// InitOptions control Init.
type InitOptions struct {
	// Force rewrites config.toml and api.token of an existing home. The
	// identity and the store are kept: a peer ID and stored leases are not
	// something to lose by accident.
	Force bool
	// Config to write; zero value means DefaultConfig(role).
	Config *Config
}

// InitResult says what Init did.
type InitResult struct {
	Home   string
	PeerID peer.ID
	// KeptIdentity is true when an existing identity was reused (--force).
	KeptIdentity bool
}

// Init creates a node home: commented config, Ed25519 identity (0600), API
// token (0600) and the store.
func Init(home string, role Role, opts InitOptions) (InitResult, error) {
	res := InitResult{Home: home}
	cfg := DefaultConfig(role)
	if opts.Config != nil {
		cfg = *opts.Config
	}
	if err := cfg.Validate(); err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	if _, err := os.Stat(ConfigPath(home)); err == nil && !opts.Force {
		return res, &homeExistsError{home: home}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return res, fmt.Errorf("init: create %s: %w", home, err)
	}
	sk, err := LoadIdentity(home)
	switch {
	case err == nil:
		res.KeptIdentity = true
	case errors.Is(err, fs.ErrNotExist):
		if sk, err = createIdentity(home); err != nil {
			return res, err
		}
	default:
		return res, fmt.Errorf("init: %w", err)
	}
	if res.PeerID, err = peer.IDFromPrivateKey(sk); err != nil {
		return res, fmt.Errorf("init: derive peer ID: %w", err)
	}
	if _, err := writeToken(home); err != nil {
		return res, err
	}
	db, err := store.Open(StorePath(home), store.Options{})
	if err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	if err := db.Close(); err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	data, err := cfg.Encode()
	if err != nil {
		return res, err
	}
	// The config is written last: its presence marks a complete home.
	if err := writeFileAtomic(ConfigPath(home), data, 0o644); err != nil {
		return res, fmt.Errorf("init: write config: %w", err)
	}
	return res, nil
}

func createIdentity(home string) (crypto.PrivKey, error) {
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("init: generate identity: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(sk)
	if err != nil {
		return nil, fmt.Errorf("init: marshal identity: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(home, identityFile), raw, 0o600); err != nil {
		return nil, fmt.Errorf("init: write identity: %w", err)
	}
	return sk, nil
}

// LoadIdentity reads the node's Ed25519 key. It refuses a key file that
// others can read, as ssh does.
func LoadIdentity(home string) (crypto.PrivKey, error) {
	path := filepath.Join(home, identityFile)
	raw, err := readSecret(path)
	if err != nil {
		return nil, err
	}
	sk, err := crypto.UnmarshalPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("load identity %s: %w", path, err)
	}
	if sk.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("load identity %s: key type %s, want Ed25519", path, sk.Type())
	}
	return sk, nil
}

// LoadToken reads the API bearer token.
func LoadToken(home string) (string, error) {
	raw, err := readSecret(TokenPath(home))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(raw))
	if len(tok) < 32 {
		return "", fmt.Errorf("load API token %s: too short", TokenPath(home))
	}
	return tok, nil
}

func writeToken(home string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("init: generate API token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	if err := writeFileAtomic(TokenPath(home), []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("init: write API token: %w", err)
	}
	return tok, nil
}

func readSecret(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("read %s: mode %#o: %w (run chmod 600 %s)", path, st.Mode().Perm(), ErrInsecureFile, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return raw, nil
}

// writeFileAtomic writes via a temp file and rename, so a crash never
// leaves a half-written key or config.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
