"""The waits pass against LLVM 22's SIInsertWaitcnts (optional oracle: skipped without llc).

Each kernel is compiled by llc; its s_waitcnt lines are removed, the rest is raised to IR
and the waits pass puts waits back. Where LLVM's counting and ours coincide the listings
must be identical; where the pass is finer than LLVM (LLVM drops to 0 whenever SMEM and LDS
are both in flight, its own TODO says lgkmcnt(i) would do) the expected waits are written
out and checked to be weaker than LLVM's, never stronger.
"""

from __future__ import annotations

import subprocess

import pytest

from asterism.ir import lower_module, raise_module
from asterism.mc.llvm_tools import find_llvm_tool
from asterism.mc.parser import parse_asm
from asterism.mc.printer import format_inst
from asterism.passes.waits import insert_waits

DECL = "declare i32 @llvm.amdgcn.workitem.id.x()\n"

KERNELS = {
    # three loads, used in order: vmcnt(2), vmcnt(1), vmcnt(0)
    "in_order": """
define amdgpu_kernel void @k(ptr addrspace(1) noalias %p, ptr addrspace(1) noalias %q) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %p, i32 %tid
  %a = load i32, ptr addrspace(1) %pa
  %p1 = getelementptr i32, ptr addrspace(1) %pa, i64 256
  %b = load i32, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %pa, i64 512
  %c = load i32, ptr addrspace(1) %p2
  %q0 = getelementptr i32, ptr addrspace(1) %q, i32 %tid
  %x = mul i32 %a, %a
  store i32 %x, ptr addrspace(1) %q0
  %q1 = getelementptr i32, ptr addrspace(1) %q0, i64 256
  %y = mul i32 %b, %b
  store i32 %y, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %q0, i64 512
  %z = mul i32 %c, %c
  store i32 %z, ptr addrspace(1) %q2
  ret void
}
""",
    # a loop: SMEM results used in the loop body, two loads per iteration
    "loop": """
define amdgpu_kernel void @k(ptr addrspace(1) noalias %p, ptr addrspace(1) noalias %q,
                             i32 %n) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi i32 [ 0, %entry ], [ %acc1, %loop ]
  %idx = add i32 %tid, %i
  %pa = getelementptr i32, ptr addrspace(1) %p, i32 %idx
  %a = load i32, ptr addrspace(1) %pa
  %pb = getelementptr i32, ptr addrspace(1) %pa, i32 4096
  %b = load i32, ptr addrspace(1) %pb
  %m = mul i32 %a, %b
  %acc1 = add i32 %acc, %m
  %i1 = add i32 %i, 64
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  %q0 = getelementptr i32, ptr addrspace(1) %q, i32 %tid
  store i32 %acc1, ptr addrspace(1) %q0
  ret void
}
""",
    # LDS reads with an SMEM load in flight behind them
    "lds_smem": """
@lds = internal addrspace(3) global [256 x i32] poison, align 4
define amdgpu_kernel void @k(ptr addrspace(1) noalias %q, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p0 = getelementptr i32, ptr addrspace(3) @lds, i32 %tid
  %a = load i32, ptr addrspace(3) %p0
  %p1 = getelementptr i32, ptr addrspace(3) %p0, i32 64
  %b = load i32, ptr addrspace(3) %p1
  %p2 = getelementptr i32, ptr addrspace(3) %p0, i32 128
  %c = load i32, ptr addrspace(3) %p2
  %x = mul i32 %a, %a
  %y = mul i32 %b, %x
  %z = mul i32 %c, %y
  %q0 = getelementptr i32, ptr addrspace(1) %q, i32 %tid
  store i32 %z, ptr addrspace(1) %q0
  ret void
}
""",
    # a branch: one path issues a load the other does not
    "branch": """
define amdgpu_kernel void @k(ptr addrspace(1) noalias %p, ptr addrspace(1) noalias %q,
                             i32 %n) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %p, i32 %tid
  %a = load i32, ptr addrspace(1) %pa
  %c = icmp eq i32 %n, 0
  br i1 %c, label %then, label %join
then:
  %pb = getelementptr i32, ptr addrspace(1) %pa, i32 4096
  %b = load i32, ptr addrspace(1) %pb
  br label %join
join:
  %v = phi i32 [ %b, %then ], [ 7, %entry ]
  %s = add i32 %a, %v
  %q0 = getelementptr i32, ptr addrspace(1) %q, i32 %tid
  store i32 %s, ptr addrspace(1) %q0
  ret void
}
""",
}


@pytest.fixture(scope="module")
def llc() -> str:
    path = find_llvm_tool("llc")
    if path is None:
        pytest.skip("llc (LLVM 22) is not installed: the LLVM oracle is optional")
    return path


def llc_body(llc: str, ll: str, target: str) -> list[str]:
    """The instruction and label lines llc emits for kernel k."""
    out = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-o", "-"],
                         input=ll + DECL, capture_output=True, text=True, check=True).stdout
    body = out.split("\nk:", 1)[1].split("\ts_endpgm", 1)[0] + "\ts_endpgm"
    lines = [line.split(";")[0].rstrip() for line in body.splitlines()]
    return [line.strip() for line in lines if line.strip()]


def listing(lines: list[str], target: str, strip: bool) -> list[str]:
    """Our listing of `lines` (without LLVM's s_waitcnt and after the pass, if `strip`)."""
    kept = [x for x in lines if not (strip and x.startswith("s_waitcnt"))]
    text = f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"\n.text\nk:\n' + "\n".join(kept)
    module = raise_module(parse_asm(text + "\n", "llc.s"))
    if strip:
        insert_waits(module, barrier="none")
    return [format_inst(i) if hasattr(i, "mnemonic") else f"{i.name}:"
            for i in lower_module(module).kernels[0].body]


def waits(listing_: list[str]) -> list[tuple[int, str]]:
    """(index among non-wait instructions, wait text) of each s_waitcnt."""
    out, n = [], 0
    for line in listing_:
        if line.startswith("s_waitcnt"):
            out.append((n, line))
        elif not line.endswith(":"):
            n += 1
    return out


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("name", ["in_order", "loop", "branch"])
def test_same_waits_as_llvm(llc, name, target):
    lines = llc_body(llc, KERNELS[name], target)
    assert waits(listing(lines, target, strip=True)) == waits(listing(lines, target, False))


def test_in_order_counts(llc):
    lines = llc_body(llc, KERNELS["in_order"], "gfx942")
    assert [w for _i, w in waits(listing(lines, "gfx942", True))] == [
        "s_waitcnt lgkmcnt(0)", "s_waitcnt vmcnt(2)", "s_waitcnt vmcnt(1)",
        "s_waitcnt vmcnt(0)"]


def test_finer_than_llvm_with_smem_behind_lds(llc):
    # ds_read2st64 v[0:1] and ds_read v3, then s_load: the first use of v0 needs only the
    # younger DS read behind it to be countable (the SMEM may return in any order, so it is
    # not counted): lgkmcnt(1); LLVM waits for lgkmcnt(0).
    lines = llc_body(llc, KERNELS["lds_smem"], "gfx942")
    ours = waits(listing(lines, "gfx942", True))
    theirs = waits(listing(lines, "gfx942", False))
    assert theirs == [(5, "s_waitcnt lgkmcnt(0)")]
    assert ours == [(5, "s_waitcnt lgkmcnt(1)"), (7, "s_waitcnt lgkmcnt(0)")]
