#include "gen.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "output_file.h"
#include "tilescope/gen/ast.h"
#include "tilescope/ir/diag.h"

namespace tilescope::cli {
namespace {

// A kernel AST is small: a document of more than 16 MiB is not one (the schema bounds it far below).
std::string read_ast_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::ostringstream s;
  constexpr std::streamsize kMax = std::streamsize{16} << 20;
  std::string buf(1 << 16, '\0');
  std::streamsize total = 0;
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    total += in.gcount();
    if (total > kMax) throw Error(fmt::format("{}: more than 16 MiB, not a kernel AST", path));
    s.write(buf.data(), in.gcount());
  }
  if (in.bad()) throw Error(fmt::format("{}: cannot read", path));
  return s.str();
}

void write_out(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw Error("cannot write to stdout");
    return;
  }
  write_file_atomically(path, {text});
}

// The problems of `file`, or its AST.
gen::Parsed parse_file(const std::string& file) { return gen::parse_text(read_ast_file(file)); }

int report(const std::string& file, const gen::Parsed& p, bool json) {
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& q : p.problems)
      a.push_back({{"kind", gen::problem_kind_name(q.kind)},
                   {"pointer", q.pointer},
                   {"message", q.message},
                   {"expected", q.expected},
                   {"found", q.found}});
    std::cout << a.dump(2) << "\n";
  } else {
    for (const auto& q : p.problems) std::cerr << file << ":" << q.str() << "\n";
  }
  return p.problems.empty() ? 0 : 1;
}

}  // namespace

CLI::App* add_gen(CLI::App& app, GenOptions& o) {
  auto* gen = app.add_subcommand(
      "gen",
      "Ask an LLM for a kernel, proven on the CPU against a PyTorch reference; the kernel AST's tools");
  gen->require_subcommand(0, 1);
  auto* schema = gen->add_subcommand("schema", "Print the JSON Schema (draft 2020-12) of the kernel AST");
  schema->add_option("-o,--output", o.output, "write it to this file instead of stdout");
  gen->add_subcommand("ops", "Print the op reference of the kernel AST (fields, operands, TTIR)");
  auto* check = gen->add_subcommand("check", "Validate a kernel AST: every problem with its JSON pointer");
  check->add_option("file", o.file, "kernel AST (JSON)")->required();
  check->add_flag("--json", o.json, "print the problems as a JSON array on stdout");
  auto* lower = gen->add_subcommand("lower", "Validate a kernel AST and print its TTIR");
  lower->add_option("file", o.file, "kernel AST (JSON)")->required();
  lower->add_option("-o,--output", o.output, "write the TTIR to this file instead of stdout");
  auto* python = gen->add_subcommand(
      "python", "Validate a kernel AST and print it as Triton Python: the @triton.jit kernel and a launcher");
  python->add_option("file", o.file, "kernel AST (JSON)")->required();
  python->add_option("-o,--output", o.output, "write the Python to this file instead of stdout");
  add_gen_run(*gen, o.run);
  return gen;
}

int gen_command(const CLI::App& gen, const GenOptions& o) {
  if (gen.get_subcommands().empty() || gen.got_subcommand("eval")) {
    try {
      return gen.get_subcommands().empty() ? gen_run_command(o.run) : gen_eval_command(o.run);
    } catch (const std::filesystem::filesystem_error& e) {  // a folder it cannot make or write: the user's
      throw Error(fmt::format("{}: {}", e.path1().string(), e.code().message()));
    }
  }
  if (gen.got_subcommand("schema")) {
    write_out(o.output, gen::schema().dump(2) + "\n");
    return 0;
  }
  if (gen.got_subcommand("ops")) {
    write_out("", gen::op_reference());
    return 0;
  }
  gen::Parsed p = parse_file(o.file);
  if (gen.got_subcommand("check")) {
    const int rc = report(o.file, p, o.json);
    if (rc == 0 && !o.json) std::cerr << o.file << ": a valid kernel AST (version " << gen::kVersion << ")\n";
    return rc;
  }
  if (!p.ast) return report(o.file, p, false);
  write_out(o.output, gen.got_subcommand("python") ? gen::python(*p.ast) : gen::lower(*p.ast));
  return 0;
}

}  // namespace tilescope::cli
