package node

import (
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// VerifyAttestations checks an export file on its own, with no network,
// against the node's [attest] terms (see attest.VerifyExport).
func VerifyAttestations(data []byte, cfg AttestConfig, now time.Time) (findings []attest.ExportFinding, ok bool, err error) {
	return attest.VerifyExport(data, attest.ExportCheck{
		MaxSkew: cfg.MaxSkew, EnergyTolerance: cfg.EnergyTolerance,
		MaxGap: max(cfg.Window, cfg.VoucherInterval) + cfg.VoucherGrace,
	}, now)
}
