#include "storage/model/transforms.h"

#include <re2/re2.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::storage {

namespace {

using Kind = Transform::Kind;

struct KindName {
  Kind kind;
  std::string_view flag;
  std::string_view label;
  bool takes_argument;  // required (kCollapseRecursion's is optional)
};
constexpr KindName kKinds[] = {
    {Kind::kInvert, "invert", "Inverted", false},
    {Kind::kFocusFunction, "focus", "Focus", true},
    {Kind::kFocusSubtree, "focus-subtree", "Focus subtree", true},
    {Kind::kCallersOf, "callers-of", "Callers of", true},
    {Kind::kMerge, "merge", "Merge", true},
    {Kind::kHide, "hide", "Hide", true},
    {Kind::kCollapseRecursion, "collapse-recursion", "Collapse recursion", false},
    {Kind::kCollapseDirectRecursion, "collapse-direct-recursion", "Collapse direct recursion", true},
    {Kind::kCollapseLibrary, "collapse-library", "Collapse", true},
    {Kind::kDropKernel, "drop-kernel", "Kernel frames dropped", false},
};

const KindName& Describe(Kind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k;
  }
  return kKinds[0];
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// One flag per function id: whether `test(function)` holds.
template <typename Test>
std::vector<uint8_t> FunctionMask(const Stacks& stacks, Test&& test) {
  std::vector<uint8_t> mask(stacks.functions->size());
  for (uint32_t id = 0; id < mask.size(); ++id) mask[id] = test((*stacks.functions)[id]) ? 1 : 0;
  return mask;
}

std::vector<uint8_t> NamedMask(const Stacks& stacks, const std::string& name) {
  return FunctionMask(stacks, [&](const StackFunction& f) { return f.name == name; });
}

// Every stack rewritten by `rewrite(begin, end, out)`, which returns false
// to drop the stack.
template <typename Rewrite>
Stacks Rewritten(const Stacks& in, Rewrite&& rewrite) {
  Stacks out = in.EmptyLike();
  out.elements.reserve(in.elements.size());
  std::vector<uint32_t> stack;
  for (size_t i = 0; i < in.size(); ++i) {
    auto [begin, end] = in.Stack(i);
    stack.clear();
    if (!rewrite(begin, end, &stack)) continue;
    out.Add(stack.data(), stack.data() + stack.size(), in.attribute_sets[i], in.weights[i], in.events[i]);
  }
  return out;
}

Stacks Removed(const Stacks& in, const std::vector<uint8_t>& remove) {
  return Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
    for (const uint32_t* p = b; p != e; ++p) {
      if (!remove[*p]) out->push_back(*p);
    }
    return true;
  });
}

Stacks CollapseRecursion(const Stacks& in, const std::vector<uint8_t>* only, bool indirect) {
  return Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
    // Indirect: once the function is on the stack, frames after it are held
    // back until it is called again (then they are dropped with that call)
    // or the stack ends (then they are kept).
    size_t open_at = SIZE_MAX;  // out->size() right after the outermost call
    uint32_t open_function = 0;
    for (const uint32_t* p = b; p != e; ++p) {
      const uint32_t f = *p;
      const bool eligible = only == nullptr || (*only)[f];
      if (indirect && open_at != SIZE_MAX && f == open_function) {
        out->resize(open_at);
        continue;
      }
      if (eligible && !out->empty() && out->back() == f) continue;
      out->push_back(f);
      if (indirect && eligible && open_at == SIZE_MAX) {
        open_at = out->size();
        open_function = f;
      }
    }
    return true;
  });
}

}  // namespace

std::string_view TransformFlag(Transform::Kind kind) { return Describe(kind).flag; }

std::string TransformSpec(const Transform& t) {
  std::string spec(Describe(t.kind).flag);
  if (t.kind == Kind::kFocusSubtree) return spec + "=" + absl::StrJoin(t.path, ";");
  if (!t.argument.empty()) spec += "=" + t.argument;
  return spec;
}

absl::StatusOr<Transform> ParseTransform(std::string_view spec) {
  size_t eq = spec.find('=');
  std::string_view flag = spec.substr(0, eq);
  std::string_view argument = eq == std::string_view::npos ? std::string_view() : spec.substr(eq + 1);
  Transform t;
  if (flag == "callees-of") flag = "focus";  // a function's callees, merged: what focus shows
  const KindName* found = nullptr;
  for (const KindName& k : kKinds) {
    if (k.flag == flag) found = &k;
  }
  const std::string name(flag);
  if (found == nullptr) return absl::InvalidArgumentError("unknown transform \"" + name + "\"");
  t.kind = found->kind;
  if (found->takes_argument && argument.empty()) {
    return absl::InvalidArgumentError("transform " + name + " needs a value (" + name + "=...)");
  }
  if (!found->takes_argument && t.kind != Kind::kCollapseRecursion && !argument.empty()) {
    return absl::InvalidArgumentError("transform " + name + " takes no value");
  }
  if (t.kind == Kind::kFocusSubtree) {
    t.path = absl::StrSplit(std::string(argument), ';');
  } else {
    t.argument = std::string(argument);
  }
  if (t.kind == Kind::kHide) {
    RE2 re(t.argument, RE2::Quiet);
    if (!re.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("hide: invalid pattern \"", t.argument, "\": ", re.error()));
    }
  }
  return t;
}

std::string TransformLabel(const Transform& t) {
  std::string label(Describe(t.kind).label);
  if (t.kind == Kind::kFocusSubtree) return label + ": " + (t.path.empty() ? "" : t.path.back());
  if (t.argument.empty()) return label;
  return label + ": " + t.argument;
}

Stacks ApplyTransform(const Stacks& in, const Transform& t) {
  switch (t.kind) {
    case Kind::kInvert:
      return Rewritten(in, [](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
        out->assign(std::reverse_iterator(e), std::reverse_iterator(b));
        return true;
      });
    case Kind::kFocusFunction: {
      std::vector<uint8_t> named = NamedMask(in, t.argument);
      return Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
        const uint32_t* first = std::find_if(b, e, [&](uint32_t f) { return named[f] != 0; });
        if (first == e) return false;
        out->assign(first, e);
        return true;
      });
    }
    case Kind::kFocusSubtree: {
      if (t.path.empty()) return in;
      // The path's functions by name (each position may be any type).
      std::vector<std::vector<uint8_t>> named;
      for (const std::string& name : t.path) named.push_back(NamedMask(in, name));
      const size_t n = named.size();
      return Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
        if (static_cast<size_t>(e - b) < n) return false;
        for (size_t k = 0; k < n; ++k) {
          if (!named[k][b[k]]) return false;
        }
        out->assign(b + n - 1, e);
        return true;
      });
    }
    case Kind::kCallersOf: {
      std::vector<uint8_t> named = NamedMask(in, t.argument);
      return Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
        const uint32_t* last = e;
        for (const uint32_t* p = e; p != b;) {
          if (named[*--p]) {
            last = p;
            break;
          }
        }
        if (last == e) return false;
        out->assign(std::reverse_iterator(last + 1), std::reverse_iterator(b));
        return true;
      });
    }
    case Kind::kMerge:
      return Removed(in, NamedMask(in, t.argument));
    case Kind::kHide: {
      RE2 re(t.argument, RE2::Quiet);
      if (!re.ok()) return in;
      return Removed(in, FunctionMask(in, [&](const StackFunction& f) { return RE2::PartialMatch(f.name, re); }));
    }
    case Kind::kCollapseRecursion: {
      if (t.argument.empty()) return CollapseRecursion(in, nullptr, false);
      std::vector<uint8_t> named = NamedMask(in, t.argument);
      return CollapseRecursion(in, &named, true);
    }
    case Kind::kCollapseDirectRecursion: {
      std::vector<uint8_t> named = NamedMask(in, t.argument);
      return CollapseRecursion(in, &named, false);
    }
    case Kind::kCollapseLibrary: {
      const std::string_view library = Basename(t.argument);
      std::vector<uint8_t> in_library = FunctionMask(
          in, [&](const StackFunction& f) { return !f.executable.empty() && Basename(f.executable) == library; });
      auto functions = std::make_shared<FunctionTable>(*in.functions);
      const uint32_t collapsed = functions->Intern(library, FrameType::kNative, t.argument, 0);
      Stacks out = Rewritten(in, [&](const uint32_t* b, const uint32_t* e, std::vector<uint32_t>* out) {
        for (const uint32_t* p = b; p != e; ++p) {
          if (!in_library[*p]) {
            out->push_back(*p);
          } else if (out->empty() || out->back() != collapsed) {
            out->push_back(collapsed);
          }
        }
        return true;
      });
      out.functions = std::move(functions);
      return out;
    }
    case Kind::kDropKernel:
      return Removed(in, FunctionMask(in, [](const StackFunction& f) { return f.type == FrameType::kKernel; }));
  }
  return in;
}

Stacks ApplyTransforms(Stacks stacks, const std::vector<Transform>& transforms) {
  for (const Transform& t : transforms) stacks = ApplyTransform(stacks, t);
  return stacks;
}

}  // namespace kiln::storage
