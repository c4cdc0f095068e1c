package lease

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/store"
)

// TestLeasePartiesFollowTheBook: the parties of a live lease are
// protected from the moment the book writes it until it ends; a peer
// with two leases stays protected until both end.
func TestLeasePartiesFollowTheBook(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	id := func() peer.ID {
		sk, _, _ := crypto.GenerateEd25519Key(nil)
		p, _ := peer.IDFromPrivateKey(sk)
		return p
	}
	renter, provider, stranger := id(), id(), id()
	// A live lease stored before start is found by load.
	if err := db.PutLease(&store.Lease{ID: "old", Renter: renter.String(), Provider: provider.String(), State: Running}); err != nil {
		t.Fatal(err)
	}
	book := NewBook(db, nil)
	parties := NewParties()
	book.OnChange(parties.Changed)
	if err := parties.Load(db); err != nil {
		t.Fatal(err)
	}
	if !parties.Has(renter) || !parties.Has(provider) || parties.Has(stranger) {
		t.Fatal("after load: want the stored lease's parties protected, and only them")
	}
	if err := book.Put(&store.Lease{ID: "new", Renter: renter.String(), Provider: provider.String(), State: Awarded}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := book.Finish("old", Completed, "done", nil); err != nil {
		t.Fatal(err)
	}
	if !parties.Has(provider) {
		t.Fatal("the provider of a live lease lost its protection when another lease ended")
	}
	if _, _, err := book.Finish("new", Cancelled, "stop", nil); err != nil {
		t.Fatal(err)
	}
	if parties.Has(renter) || parties.Has(provider) {
		t.Fatal("parties still protected after every lease ended")
	}
}
