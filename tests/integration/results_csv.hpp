#pragma once
// results.csv read back as a table, for the integration tests' checks of a run's columns.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

#include "catch.hpp"

namespace yolotrain::test {

// results.csv as a table: its header's names and a row of numbers per epoch.
struct Csv {
  std::vector<std::string> names;
  std::vector<std::vector<double>> rows;
  double at(std::size_t row, const std::string& name) const {
    const auto it = std::find(names.begin(), names.end(), name);
    REQUIRE(it != names.end());
    return rows.at(row).at(static_cast<std::size_t>(it - names.begin()));
  }
};

inline Csv read_results(const std::filesystem::path& file) {
  std::istringstream in(slurp(file));
  Csv csv;
  std::string line;
  std::getline(in, line);
  std::istringstream header(line);
  for (std::string cell; std::getline(header, cell, ',');)
    csv.names.push_back(cell.substr(cell.find_first_not_of(' ')));
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) row.push_back(std::stod(cell));
    csv.rows.push_back(row);
  }
  return csv;
}

// results.csv's text without its `time` column (the second), which no two runs share: what a
// stopped and resumed run must write byte for byte as an uninterrupted one.
inline std::string without_time(const std::string& csv) {
  std::istringstream in(csv);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(','), second = line.find(',', first + 1);
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    out += line.substr(0, first) + line.substr(second) + "\n";
  }
  return out;
}

}  // namespace yolotrain::test
