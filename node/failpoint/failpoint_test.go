package failpoint

import "testing"

// Unarmed and differently armed points do nothing; the count of hits
// of the armed point is kept. (Killing the process is what the crash tests
// of cmd/idlegrid exercise.)
func TestHitOnlyCountsTheArmedPoint(t *testing.T) {
	arm("")
	Hit(RenterVoucherStored)
	if hitCount() != 0 {
		t.Fatal("an unarmed failpoint counted a hit")
	}
	arm(ProviderLeaseEnded + ":3")
	Hit(RenterVoucherStored)
	Hit(ProviderLeaseEnded)
	Hit(ProviderLeaseEnded)
	if hitCount() != 2 || after != 2 {
		t.Fatalf("hits %d, after %d; want 2 and 2", hitCount(), after)
	}
	arm("")
}
