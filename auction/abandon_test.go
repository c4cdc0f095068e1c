package auction

import (
	"errors"
	"testing"
	"time"
)

// TestAbandonNoteNeedsItsAward: a provider can note only an award the
// renter signed to it, within AbandonNoteFor of the award.
func TestAbandonNoteNeedsItsAward(t *testing.T) {
	pkey, _ := testKey(t, msgProviderSeed)
	rkey, _ := testKey(t, msgRenterSeed)
	awardEnv, _ := msgLease(t)
	// Another provider's award, signed by the renter.
	other := msgAward(t)
	other.Provider = msgPeer(t, 3)
	otherEnv, err := SealAward(other, rkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(n *AbandonNote)
	}{
		{"another provider's award", func(n *AbandonNote) { n.AwardEnv = otherEnv }},
		{"another renter", func(n *AbandonNote) { n.Renter = msgPeer(t, 4) }},
		{"another lease", func(n *AbandonNote) { n.Lease = msgRecordID("other") }},
		{"before the award", func(n *AbandonNote) { n.AtMs = fixedNow.UnixMilli() }},
		{"long after the award", func(n *AbandonNote) { n.AtMs = fixedNow.Add(2 * AbandonNoteFor).UnixMilli() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NoteAbandoned(awardEnv, fixedNow.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(n)
			raw, err := SealAbandonNote(n, pkey)
			if err != nil {
				return // refused already at sealing (a renter that is not the award's)
			}
			if _, _, err := OpenAbandonNote(raw); !errors.Is(err, ErrNoteUnbacked) {
				t.Fatalf("open: %v, want ErrNoteUnbacked", err)
			}
		})
	}
	n, err := NoteAbandoned(awardEnv, fixedNow.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n.Expired(fixedNow.Add(time.Minute+AbandonNoteFor/2), time.Minute) || !n.Expired(fixedNow.Add(2*AbandonNoteFor), time.Minute) {
		t.Fatal("a note counts for AbandonNoteFor after it was made")
	}
}
