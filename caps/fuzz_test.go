package caps

import "testing"

// FuzzParse: any capability string parses to an error or caps whose
// checks answer, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(`allow r, allow command "osd blocklist add"; profile rbd`, `allow rwx pool=a object_prefix rbd_data, profile rbd pool=b`)
	f.Add("allow *", "allow r class-read pool x")
	f.Fuzz(func(t *testing.T, mon, osd string) {
		e, err := Parse(map[string]string{"mon": mon, "osd": osd})
		if err != nil {
			return
		}
		e.Mon.Allows("auth add", Write|Exec)
		e.OSD.Allows("a", "rbd_data.1", Read|ClassWrite)
		e.OSD.AllowsPool("b", Write)
	})
}
