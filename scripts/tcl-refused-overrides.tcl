# Appended by scripts/tcl-suite.sh and scripts/tcl-cluster-mode.sh to their private copy of
# Redis's tests/support/server.tcl.
#
# In external mode the harness applies a block's overrides with CONFIG SET, outside the block's
# error handling: a value shoal refuses because its feature is not built (config/unbuilt.go, e.g.
# `start_server {overrides {appendonly yes}}`) would end the whole unit. Such a block is skipped
# and reported as ignored instead, as the harness does for a block whose tags are denied (its
# tests are listed in tcl-skips.txt with the missing feature). Other CONFIG SET errors still fail.
rename run_external_server_test shoal_run_external_server_test
proc run_external_server_test {code overrides} {
    set probe [redis $::host $::port 0 $::tls]
    foreach {param val} $overrides {
        set old [lindex [$probe config get $param] 1]
        if {[catch {$probe config set $param $val} err]} {
            if {[string match {*is not available in shoal*} $err]} {
                $probe close
                incr ::num_aborted
                send_data_packet $::test_server_fd ignore "overrides {$param $val}: $err"
                return
            }
        } else {
            $probe config set $param $old
        }
    }
    $probe close
    uplevel 1 [list shoal_run_external_server_test $code $overrides]
}
