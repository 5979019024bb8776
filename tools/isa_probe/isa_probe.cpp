// isa_probe: decode AMDGPU machine words with LLVM's MC layer and print, per word, what
// LLVM knows about the instruction (JSON lines). Used only by tools/gen_isa.py at
// development time; the asterism package never links LLVM.
//
// usage: isa_probe CPU < words.txt      (one instruction per line, hex bytes, little endian)
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"
#include <iostream>
#include <string>

using namespace llvm;

static std::string esc(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (c == '\t') o += ' ';
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

int main(int argc, char **argv) {
  if (argc < 2) { errs() << "usage: isa_probe CPU < hexlines\n"; return 2; }
  InitializeAllTargetInfos();
  InitializeAllTargetMCs();
  InitializeAllDisassemblers();
  std::string err;
  Triple TT("amdgcn-amd-amdhsa");
  const Target *T = TargetRegistry::lookupTarget(TT, err);
  if (!T) { errs() << err << "\n"; return 1; }
  std::unique_ptr<MCRegisterInfo> MRI(T->createMCRegInfo(TT));
  MCTargetOptions MCO;
  std::unique_ptr<MCAsmInfo> MAI(T->createMCAsmInfo(*MRI, TT, MCO));
  std::unique_ptr<MCSubtargetInfo> STI(T->createMCSubtargetInfo(TT, argv[1], ""));
  std::unique_ptr<MCInstrInfo> MII(T->createMCInstrInfo());
  MCContext Ctx(TT, MAI.get(), MRI.get(), STI.get());
  std::unique_ptr<MCDisassembler> DisAsm(T->createMCDisassembler(*STI, Ctx));
  std::unique_ptr<MCInstPrinter> IP(T->createMCInstPrinter(TT, 0, *MAI, *MII, *MRI));
  unsigned HwMode = STI->getHwMode(MCSubtargetInfo::HwMode_RegInfo);

  std::string line;
  while (std::getline(std::cin, line)) {
    outs().flush();  // (the lines so far survive a crash on this word: gen_isa resumes after it)
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i + 1 < line.size(); i += 2)
      bytes.push_back((uint8_t)std::stoul(line.substr(i, 2), nullptr, 16));
    MCInst I;
    uint64_t Size = 0;
    auto S = DisAsm->getInstruction(I, Size, ArrayRef<uint8_t>(bytes), 0, nulls());
    if (S != MCDisassembler::Success) { outs() << "{\"ok\":false}\n"; continue; }
    std::string txt;
    raw_string_ostream os(txt);
    IP->printInst(&I, 0, "", *STI, os);
    while (!txt.empty() && (txt[0] == ' ' || txt[0] == '\t')) txt.erase(0, 1);
    const MCInstrDesc &D = MII->get(I.getOpcode());
    outs() << "{\"ok\":true,\"name\":\"" << MII->getName(I.getOpcode()) << "\",\"size\":" << Size
           << ",\"text\":\"" << esc(txt) << "\",\"ndefs\":" << D.getNumDefs()
           << ",\"ts\":\"" << D.TSFlags << "\"";
    outs() << ",\"ops\":[";
    for (unsigned k = 0; k < I.getNumOperands(); k++) {
      const MCOperand &O = I.getOperand(k);
      if (k) outs() << ",";
      if (O.isReg()) {
        outs() << "{\"reg\":\"" << (O.getReg() ? MRI->getName(O.getReg()) : "NoRegister") << "\"}";
      } else if (O.isImm()) {
        outs() << "{\"imm\":" << O.getImm() << "}";
      } else if (O.isSFPImm() || O.isDFPImm()) {
        outs() << "{\"fpimm\":1}";
      } else {
        outs() << "{\"expr\":1}";
      }
    }
    outs() << "],\"desc\":[";
    for (unsigned k = 0; k < D.getNumOperands(); k++) {
      const MCOperandInfo &O = D.operands()[k];
      if (k) outs() << ",";
      int rc = MII->getOpRegClassID(O, HwMode);
      outs() << "{\"rc\":\"" << (rc >= 0 ? MRI->getRegClassName(&MRI->getRegClass(rc)) : "")
             << "\",\"bits\":" << (rc >= 0 ? MRI->getRegClass(rc).getSizeInBits() : 0)
             << ",\"type\":" << (int)O.OperandType
             << ",\"tied\":" << D.getOperandConstraint(k, MCOI::TIED_TO) << "}";
    }
    outs() << "],\"idefs\":[";
    bool first = true;
    for (auto r : D.implicit_defs()) { outs() << (first ? "" : ",") << "\"" << MRI->getName(r) << "\""; first = false; }
    outs() << "],\"iuses\":[";
    first = true;
    for (auto r : D.implicit_uses()) { outs() << (first ? "" : ",") << "\"" << MRI->getName(r) << "\""; first = false; }
    outs() << "],\"flags\":[";
    std::vector<const char *> fl;
    if (D.isBranch()) fl.push_back("branch");
    if (D.isConditionalBranch()) fl.push_back("cond_branch");
    if (D.isIndirectBranch()) fl.push_back("indirect_branch");
    if (D.isBarrier()) fl.push_back("barrier");
    if (D.isTerminator()) fl.push_back("terminator");
    if (D.isReturn()) fl.push_back("return");
    if (D.isCall()) fl.push_back("call");
    if (D.mayLoad()) fl.push_back("may_load");
    if (D.mayStore()) fl.push_back("may_store");
    if (D.hasUnmodeledSideEffects()) fl.push_back("side_effects");
    if (D.isCompare()) fl.push_back("compare");
    if (D.isMoveImmediate()) fl.push_back("move_imm");
    if (D.isCommutable()) fl.push_back("commutable");
    if (D.isConvergent()) fl.push_back("convergent");
    if (D.isTrap()) fl.push_back("trap");
    for (size_t k = 0; k < fl.size(); k++) outs() << (k ? "," : "") << "\"" << fl[k] << "\"";
    outs() << "]}\n";
  }
  return 0;
}
