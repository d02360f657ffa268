"""What this host's SIM cannot simulate is SIM's limit, not the kernel's (runtime/judge/simgap.py, docs/realops.md §9)."""
from __future__ import annotations

from runtime import exit_codes, verdicts
from runtime.judge import simgap

# The shape of the cost model's rejection (written here, not copied from a run): its reader of compiled functions.
READER = ("RuntimeError: Errcode: FFFFFF!\n[SIMULATION]: hasCall=0 func->opSequenceAfterOOO_.size=9 "
          "func->tileOps.size=8, func BuildFunction, file ParseInput.cpp, line 378\nlibtile_fwk_simulation.so(...)")


def test_the_cost_models_reader_rejecting_a_compiled_kernel_is_a_sim_gap():
    gap = simgap.detect(READER)
    assert gap == ("the SIM cost model of this pypto cannot read the compiled kernel (BuildFunction: hasCall=0 "
                   "func->opSequenceAfterOOO_.size=9 func->tileOps.size=8)")
    verdict, _, reason = verdicts.decide(verdicts.Evidence(mode="sim", structural="error", sim_gap=gap,
                                                           kernel_launches=1, is_script=True, exit_code=1))
    assert verdict == verdicts.SIM_UNSUPPORTED and "cannot read the compiled kernel" in reason
    assert exit_codes.of_case(verdict, "sim") == exit_codes.INFRA


def test_other_simulation_errors_are_not_read_as_gaps():
    assert simgap.detect("[SIMULATION]: something else failed, func Run, file Scheduler.cpp, line 12") is None
    assert simgap.detect("ParseInput.cpp mentioned without the component") is None


def test_the_headline_of_a_specific_code_alone_on_its_line_keeps_the_check_after_it():
    # The shape of a frontend broadcast check (written here): the code names the component, the next line the check.
    message = ("Errcode: FC0000!\nOnly allow to expand one axis! Actual expanded axes count: 2. Operand shape: "
               "([1, 1, 64]) Result shape: ([8, 4, 64]), func CheckExpandTensorValid\n\nlibstdc(+0x1) [0x1]")
    assert simgap.headline(message).startswith("Errcode: FC0000! Only allow to expand one axis!")
    assert simgap.headline("Errcode: FFFFFF!\nErrCode: F92001,[SIMULATION]: no pipe") == \
        "ErrCode: F92001,[SIMULATION]: no pipe"
    assert simgap.headline("ValueError: bad shape\nmore") == "ValueError: bad shape"
    # Behind the underlying error's type, as a RenderedParserError carries it.
    assert simgap.headline("RuntimeError: Errcode: FC3002!\nUnsupported output data type.") == \
        "RuntimeError: Errcode: FC3002! Unsupported output data type."
